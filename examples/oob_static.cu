// oob_static: oob_slack built with nvcc's default, the *static* CUDA runtime.
// The tool then sees the program only through the driver: its allocation is
// reported as cuMemAlloc, and a launch is seen only if the runtime fetches a
// launch entry point through cuGetProcAddress. Same bug, same expectations
// otherwise (see oob_slack.cu).
#include "oob_slack.cu"
