# Abseil, built here from source as static, position-independent archives with
# hidden symbols, so that libgpumemtrace.so carries its own copy: a traced
# program brings no Abseil shared libraries along with the tool, and one that
# links its own Abseil (TensorFlow, PyTorch extensions, gRPC) never meets ours
# (every symbol hidden, and a different inline namespace, lts_20220623, from
# the distribution's).
#
# The source is Debian's copy of the 20220623.1 release (the version the
# distribution's headers are), checked by its SHA-256:
#   GMT_ABSL_SOURCE   a directory holding it unpacked, or the .tar.gz; when
#                     empty, the tarball is downloaded into the build tree.
# Where neither works (no network, a bad download), the distribution's shared
# Abseil (libabsl-dev) is used instead and libgpumemtrace.so then needs its
# shared libraries at run time; configure says so.
set(GMT_ABSL_SOURCE "" CACHE STRING
    "Abseil 20220623.1 source: a directory or the .orig.tar.gz (empty: download)")
option(GMT_STATIC_ABSL
       "Link Abseil statically into libgpumemtrace.so (built from source)" ON)

set(_gmt_absl_url
    "http://deb.debian.org/debian/pool/main/a/abseil/abseil_20220623.1.orig.tar.gz")
set(_gmt_absl_sha256
    "abfe2897f3a30edaa74bc34365afe3c2a3cd012091a97dc7e008f7016adcd5fe")

# Sets `out` to the unpacked source directory, or to "" (with a message).
function(_gmt_absl_source out)
  set(${out} "" PARENT_SCOPE)
  set(tarball "")
  if(GMT_ABSL_SOURCE AND IS_DIRECTORY "${GMT_ABSL_SOURCE}")
    set(${out} "${GMT_ABSL_SOURCE}" PARENT_SCOPE)
    return()
  elseif(GMT_ABSL_SOURCE)
    set(tarball "${GMT_ABSL_SOURCE}")
  else()
    set(tarball "${CMAKE_BINARY_DIR}/_deps/abseil_20220623.1.orig.tar.gz")
    if(NOT EXISTS "${tarball}")
      message(STATUS "gpumemtrace: downloading Abseil's source: ${_gmt_absl_url}")
      file(DOWNLOAD "${_gmt_absl_url}" "${tarball}.part"
           EXPECTED_HASH SHA256=${_gmt_absl_sha256} STATUS status
           TIMEOUT 120)
      list(GET status 0 code)
      if(NOT code EQUAL 0)
        list(GET status 1 why)
        file(REMOVE "${tarball}.part")
        message(WARNING "gpumemtrace: could not download Abseil's source "
                        "(${why})")
        return()
      endif()
      file(RENAME "${tarball}.part" "${tarball}")
    endif()
  endif()
  if(NOT EXISTS "${tarball}")
    message(WARNING "gpumemtrace: GMT_ABSL_SOURCE=${tarball} does not exist")
    return()
  endif()
  file(SHA256 "${tarball}" sum)
  if(NOT sum STREQUAL _gmt_absl_sha256)
    message(WARNING "gpumemtrace: ${tarball} is not Abseil 20220623.1 "
                    "(SHA-256 ${sum})")
    return()
  endif()
  set(dir "${CMAKE_BINARY_DIR}/_deps/abseil-20220623.1")
  if(NOT EXISTS "${dir}/CMakeLists.txt")
    file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${CMAKE_BINARY_DIR}/_deps")
  endif()
  if(EXISTS "${dir}/CMakeLists.txt")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    message(WARNING "gpumemtrace: ${tarball} did not unpack to ${dir}")
  endif()
endfunction()

# In a function: the visibility and testing settings stay Abseil's.
function(_gmt_add_absl dir)
  set(CMAKE_CXX_VISIBILITY_PRESET hidden)
  set(CMAKE_VISIBILITY_INLINES_HIDDEN ON)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  set(BUILD_SHARED_LIBS OFF)
  set(ABSL_PROPAGATE_CXX_STD ON)
  set(ABSL_BUILD_TESTING OFF)
  set(ABSL_ENABLE_INSTALL OFF)
  set(BUILD_TESTING OFF)
  # Abseil's own sources, not ours: no warnings of ours, none as errors.
  add_subdirectory("${dir}" "${CMAKE_BINARY_DIR}/_deps/abseil-build"
                   EXCLUDE_FROM_ALL SYSTEM)
endfunction()

set(GMT_ABSL_STATIC FALSE)
if(GMT_STATIC_ABSL)
  _gmt_absl_source(_gmt_absl_dir)
  if(_gmt_absl_dir)
    _gmt_add_absl("${_gmt_absl_dir}")
    set(GMT_ABSL_STATIC TRUE)
    message(STATUS "gpumemtrace: Abseil built from ${_gmt_absl_dir}, "
                   "linked statically")
  endif()
endif()
if(NOT GMT_ABSL_STATIC)
  find_package(absl REQUIRED)
  message(STATUS "gpumemtrace: the distribution's shared Abseil; "
                 "libgpumemtrace.so needs its libraries at run time")
endif()
