# Packaging: what `cmake --install` adds beyond the files
# themselves (the library and headers are installed by interpose/, the
# launcher by cli/):
#
#   <prefix>/lib/cmake/gpumemtrace/   gpumemtraceConfig.cmake (+ Version,
#                                     Targets): find_package(gpumemtrace)
#                                     gives gpumemtrace::gpumemtrace (link
#                                     the tracer) and gpumemtrace::headers
#                                     (gmt/gmt.h only, for preloaded use)
#   <prefix>/lib/pkgconfig/gpumemtrace.pc
#
# Included once from the top CMakeLists.txt, after every add_subdirectory().
include(CMakePackageConfigHelpers)

set(GMT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/gpumemtrace"
    CACHE STRING "Where gpumemtraceConfig.cmake is installed, under the prefix")

# The public header alone. Its declarations are weak: a program built against
# this target runs without the tracer and binds to it when it is preloaded.
add_library(gmt_public_headers INTERFACE)
target_include_directories(gmt_public_headers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(gmt_public_headers PROPERTIES EXPORT_NAME headers)
add_library(gpumemtrace::headers ALIAS gmt_public_headers)
install(TARGETS gmt_public_headers EXPORT gpumemtraceTargets)

# The library links Abseil and nlohmann_json privately and whole (static
# engine), and finds CUDA in the traced process at run time, so consumers
# need no find_dependency(). Installed binaries find their own libraries by
# $ORIGIN, and any non-system ones (a private Abseil prefix) by the link path.
set_target_properties(gpumemtrace PROPERTIES
  INSTALL_RPATH "$ORIGIN"
  INSTALL_RPATH_USE_LINK_PATH TRUE)
if(TARGET gmt_launcher)
  set_target_properties(gmt_launcher PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
    INSTALL_RPATH_USE_LINK_PATH TRUE)
endif()
# A program that links the library may reference it only through gmt.h's
# weak declarations (or only through cudaMalloc, which the runtime defines
# too); an --as-needed linker (Ubuntu's default) would then drop it, or drop
# libcudart. Consumers link without --as-needed.
set_property(TARGET gpumemtrace APPEND PROPERTY
  INTERFACE_LINK_OPTIONS "LINKER:--no-as-needed")
# In the build tree, as in the install tree.
add_library(gpumemtrace::gpumemtrace ALIAS gpumemtrace)

install(EXPORT gpumemtraceTargets
  NAMESPACE gpumemtrace::
  FILE gpumemtraceTargets.cmake
  DESTINATION ${GMT_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/gpumemtraceConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/gpumemtraceConfig.cmake
  INSTALL_DESTINATION ${GMT_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# 0.x: minor versions may change the API, so only the same minor matches.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/gpumemtraceConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/gpumemtraceConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/gpumemtraceConfigVersion.cmake
  DESTINATION ${GMT_INSTALL_CMAKEDIR})

# pkg-config: written at install time, so `cmake --install --prefix P` gets
# paths under P (the configure-time prefix may differ).
install(CODE "
  set(GMT_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(GMT_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(GMT_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(GMT_PC_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/gpumemtrace.pc.in\"
                 \"${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/gpumemtrace.pc\" @ONLY)
  file(INSTALL \"${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/gpumemtrace.pc\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
")
