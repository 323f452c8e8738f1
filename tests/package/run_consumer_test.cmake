# The installed-package consumer test ("an installed-package consumer
# test"). Run by CTest as `cmake -P`:
#
#   1. cmake --install <build> into a fresh prefix;
#   2. the files a package needs are there (library, header, config, version,
#      pkg-config file, and the launcher when the build has one);
#   3. tests/package/consumer (find_package(gpumemtrace)) configures, builds
#      and runs against the prefix: linked it sees the tracer, header-only it
#      does not, and does once the library is preloaded; the linked program
#      loads the library from the prefix, not from the build tree;
#   4. pkg-config --cflags --libs gpumemtrace names the prefix, and a program
#      built with exactly those flags runs.
#
# Variables: BUILD_DIR, CONSUMER_DIR, WORK_DIR, CXX, GENERATOR, LIBDIR,
# EXPECT_LAUNCHER (0/1).
cmake_minimum_required(VERSION 3.24)

function(run_step what)
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

function(expect_match what text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected /${regex}/ in:\n${text}")
  endif()
  message(STATUS "ok: ${what}")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

# 1. Install.
run_step("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}"
         --prefix "${prefix}")

# 2. The files.
set(expected
  "${LIBDIR}/libgpumemtrace.so"
  "include/gmt/gmt.h"
  "${LIBDIR}/cmake/gpumemtrace/gpumemtraceConfig.cmake"
  "${LIBDIR}/cmake/gpumemtrace/gpumemtraceConfigVersion.cmake"
  "${LIBDIR}/cmake/gpumemtrace/gpumemtraceTargets.cmake"
  "${LIBDIR}/pkgconfig/gpumemtrace.pc")
if(EXPECT_LAUNCHER)
  list(APPEND expected "bin/gpumemtrace")
endif()
foreach(f ${expected})
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()
message(STATUS "ok: installed ${expected}")

# 3. find_package consumer.
set(build "${WORK_DIR}/consumer-build")
run_step("configure the consumer" ${CMAKE_COMMAND} -S "${CONSUMER_DIR}"
         -B "${build}" -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
         "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_PREFIX_PATH=${prefix}")
run_step("build the consumer" ${CMAKE_COMMAND} --build "${build}")
file(READ "${build}/found.txt" found)
expect_match("package config" "${found}" "include=${prefix}/include\n")
if(EXPECT_LAUNCHER)
  expect_match("launcher variable" "${found}"
               "launcher=${prefix}/bin/gpumemtrace\n")
endif()

run_step("run consumer_linked" "${build}/consumer_linked")
expect_match("linked consumer sees the tracer" "${step_output}"
             "^gmt available=1 active=1 allocations=0 live_bytes=0\n$")
run_step("ldd consumer_linked" ldd "${build}/consumer_linked")
expect_match("linked consumer loads the installed library" "${step_output}"
             "libgpumemtrace.so.[0-9]+ => ${prefix}/${LIBDIR}/libgpumemtrace")

run_step("run consumer_headers" "${build}/consumer_headers")
expect_match("header-only consumer runs without the tracer" "${step_output}"
             "^gmt available=0\n$")
run_step("run consumer_headers preloaded" ${CMAKE_COMMAND} -E env
         "LD_PRELOAD=${prefix}/${LIBDIR}/libgpumemtrace.so"
         "${build}/consumer_headers")
expect_match("header-only consumer binds to the preloaded tracer"
             "${step_output}" "^gmt available=1 active=1 ")

# 4. pkg-config.
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not found: pkg-config check skipped")
  return()
endif()
run_step("pkg-config" ${CMAKE_COMMAND} -E env
         "PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig"
         ${PKG_CONFIG} --cflags --libs gpumemtrace)
string(STRIP "${step_output}" flags)
expect_match("pkg-config flags" "${flags}"
  "^-I${prefix}/include -L${prefix}/${LIBDIR} -Wl,--no-as-needed -lgpumemtrace$")
separate_arguments(flag_list UNIX_COMMAND "${flags}")
run_step("build with pkg-config flags" "${CXX}" -std=c++17
         "${CONSUMER_DIR}/consumer.cc" ${flag_list}
         "-Wl,-rpath,${prefix}/${LIBDIR}" -o "${WORK_DIR}/consumer_pc")
run_step("run consumer_pc" "${WORK_DIR}/consumer_pc")
expect_match("pkg-config consumer sees the tracer" "${step_output}"
             "^gmt available=1 active=1 ")
