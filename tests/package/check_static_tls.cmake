# The library's thread-local storage stays small: libcuda dlopens it under
# CUDA_INJECTION64_PATH, and one initial-exec thread-local (the interception
# depth) puts its whole TLS block into the static TLS that glibc sets aside
# for such libraries, a few hundred bytes to spare (its surplus; a dlopen
# past it fails with "cannot allocate memory in static TLS block", as a
# 2 KiB per-thread table did to every injection test). Large per-thread
# tables go on the heap behind a thread-local pointer, as the Python frame
# cache does (lib/stacks/python_frames.cc).
# Run with -DLIB=<libgpumemtrace.so> -DREADELF=<readelf> [-DMAX_BYTES=1024].
if(NOT DEFINED MAX_BYTES)
  set(MAX_BYTES 1024)
endif()
execute_process(COMMAND ${READELF} --program-headers --wide ${LIB}
                OUTPUT_VARIABLE headers RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf --program-headers ${LIB} failed (${rc})")
endif()
# "  TLS  0x... 0x... 0x... 0x<FileSiz> 0x<MemSiz> R 0x10"
string(REGEX MATCH "\n *TLS +0x[0-9a-f]+ +0x[0-9a-f]+ +0x[0-9a-f]+ +0x[0-9a-f]+ +0x([0-9a-f]+)"
       tls "${headers}")
if(NOT tls)
  message(STATUS "${LIB}: no TLS segment")
  return()
endif()
math(EXPR bytes "0x${CMAKE_MATCH_1}" OUTPUT_FORMAT DECIMAL)
if(bytes GREATER MAX_BYTES)
  message(SEND_ERROR
    "${LIB}: its TLS segment holds ${bytes} bytes, over ${MAX_BYTES}: "
    "loaded by libcuda (CUDA_INJECTION64_PATH) it may not fit in glibc's "
    "static TLS; put large thread-locals on the heap")
else()
  message(STATUS "${LIB}: TLS segment ${bytes} bytes (at most ${MAX_BYTES})")
endif()
