# One folder, one concern: how the folders of lib/ become libraries, and how
# every source folder states what it may include.
#
#   gmt_module(<name> SOURCES ... [DEPENDS <modules>] [INCLUDES <folders>]
#              [LIBS <libraries>])
#     lib/<name>/ as the static, position-independent library gmt_<name>,
#     linked into libgpumemtrace.so (and into the tests). DEPENDS names the
#     lib/ modules it may include and links them; INCLUDES names other
#     folders whose headers it may include (kernels/ ABI headers, the public
#     include/); LIBS are third-party libraries.
#
#   gmt_layer(<folder> [MAY_INCLUDE <folders>])
#     The same rule for a folder that is not a lib/ module (interpose/, cli/,
#     kernels/, include/).
#
# Every rule lands in <build>/layering.txt; tools/check_layering.py checks the
# sources against it on every build (target gmt_layering) and in CTest, so an
# include that crosses a line not drawn here fails both. docs/architecture.md
# draws the same picture in words, and the test checks it too.

set_property(GLOBAL PROPERTY GMT_LAYERING_RULES "")

function(_gmt_add_rule folder)
  string(JOIN " " _deps ${ARGN})
  set_property(GLOBAL APPEND PROPERTY GMT_LAYERING_RULES "${folder}: ${_deps}")
endfunction()

function(gmt_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPENDS;INCLUDES;LIBS" ${ARGN})
  add_library(gmt_${name} STATIC ${M_SOURCES})
  target_include_directories(gmt_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  target_compile_definitions(gmt_${name} PUBLIC GMT_VERSION="${PROJECT_VERSION}")
  target_compile_options(gmt_${name} PRIVATE -Wall -Wextra -fvisibility=hidden
    -fvisibility-inlines-hidden)
  set_target_properties(gmt_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set(_libs)
  set(_rule)
  foreach(dep IN LISTS M_DEPENDS)
    list(APPEND _libs gmt_${dep})
    list(APPEND _rule lib/${dep})
  endforeach()
  target_link_libraries(gmt_${name} PUBLIC ${_libs} ${M_LIBS})
  _gmt_add_rule(lib/${name} ${_rule} ${M_INCLUDES})
endfunction()

function(gmt_layer folder)
  cmake_parse_arguments(L "" "" "MAY_INCLUDE" ${ARGN})
  _gmt_add_rule(${folder} ${L_MAY_INCLUDE})
endfunction()

# Called once at the end of the top-level CMakeLists.txt: writes the rules and
# adds the build-time check and its tests.
function(gmt_write_layering)
  get_property(_rules GLOBAL PROPERTY GMT_LAYERING_RULES)
  list(SORT _rules)
  string(REPLACE ";" "\n" _text "${_rules}")
  set(_file ${CMAKE_BINARY_DIR}/layering.txt)
  file(WRITE ${_file}.in "${_text}\n")
  configure_file(${_file}.in ${_file} COPYONLY)
  find_package(Python3 COMPONENTS Interpreter)
  if(NOT Python3_Interpreter_FOUND)
    message(STATUS "gpumemtrace: no python3, the include rules are not checked")
    return()
  endif()
  set(_check ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/check_layering.py
      --rules ${_file} --root ${PROJECT_SOURCE_DIR})
  add_custom_target(gmt_layering ALL COMMAND ${_check} --quiet
    COMMENT "Checking which folders include which" VERBATIM)
  if(GMT_BUILD_TESTS)
    add_test(NAME layering.includes_follow_the_rules
             COMMAND ${_check} --doc ${PROJECT_SOURCE_DIR}/docs/architecture.md)
    # The check must be able to fail: a report writer including the engine.
    add_test(NAME layering.forbidden_include_is_caught
             COMMAND ${_check} --extra lib/report/planted.cc=lib/engine/engine.h)
    set_tests_properties(layering.forbidden_include_is_caught PROPERTIES
      PASS_REGULAR_EXPRESSION
      "lib/report/planted.cc:1: lib/report may not include \"lib/engine/engine.h\"")
    set_tests_properties(layering.includes_follow_the_rules
      layering.forbidden_include_is_caught PROPERTIES LABELS "unit")
  endif()
endfunction()
