# The shipped library carries its own Abseil: no libabsl among the shared
# libraries it needs (readelf's NEEDED entries), and no Abseil symbol, nor any
# other beyond its interface, in its dynamic symbol table (they would
# interpose on, or be interposed by, a program's own). Run with -DLIB=<libgpumemtrace.so> -DREADELF=<readelf>.
execute_process(COMMAND ${READELF} --dynamic --wide ${LIB}
                OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf --dynamic ${LIB} failed (${rc})")
endif()
string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed "${dynamic}")
if(NOT needed)
  message(FATAL_ERROR "no NEEDED entries read from ${LIB}")
endif()
foreach(entry IN LISTS needed)
  string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" name "${entry}")
  if(NOT name MATCHES "^(libc|libm|libdl|libpthread|librt|libstdc\\+\\+|libgcc_s|ld-linux-x86-64)\\.so")
    message(SEND_ERROR "${LIB} needs ${name}: only glibc, libstdc++ and libgcc are allowed")
  endif()
endforeach()
execute_process(COMMAND ${READELF} --dyn-syms --wide ${LIB}
                OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf --dyn-syms ${LIB} failed (${rc})")
endif()
string(REGEX MATCHALL "(GLOBAL|WEAK) +DEFAULT +[0-9]+ [^\n]*absl[^\n]*" exported "${symbols}")
if(exported)
  list(LENGTH exported count)
  list(GET exported 0 first)
  message(SEND_ERROR "${LIB} exports ${count} Abseil symbol(s), e.g. ${first}")
endif()
# Nothing but the interface (interpose/exports.map): the CUDA entry points,
# dlsym, the injection entry points and the public API.
string(REGEX MATCHALL "(GLOBAL|WEAK) +DEFAULT +[0-9]+ [^\n]*" defined "${symbols}")
set(others "")
foreach(line IN LISTS defined)
  string(REGEX REPLACE ".* ([^ ]+)$" "\\1" name "${line}")
  string(REGEX REPLACE "@.*" "" name "${name}")
  if(NOT name MATCHES "^(cu|gmt_|_ZN3gmt|InitializeInjection)" AND
     NOT name STREQUAL "dlsym")
    list(APPEND others "${name}")
  endif()
endforeach()
if(others)
  list(LENGTH others count)
  list(GET others 0 first)
  message(SEND_ERROR "${LIB} exports ${count} symbol(s) beyond its interface, e.g. ${first}")
endif()
list(LENGTH needed needed_count)
list(LENGTH defined defined_count)
message(STATUS "${LIB}: ${needed_count} NEEDED entries, no Abseil, "
               "${defined_count} symbols exported, all of its interface")
