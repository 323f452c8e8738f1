// The ParamLayoutSource of a real process (lib/launch/param_layout.h): the
// driver's cuFuncGetParamInfo / cuKernelGetParamInfo (CUDA 12.4), from the
// tool's driver table; a runtime launch's `func` is first made a driver
// handle with the program's cudaGetFuncBySymbol.
#ifndef GMT_LIB_PLATFORM_DRIVER_PARAM_LAYOUTS_H_
#define GMT_LIB_PLATFORM_DRIVER_PARAM_LAYOUTS_H_

namespace gmt {

// Installs it (SetParamLayoutSource). No CUDA call until the first query.
void InstallDriverParamLayouts();

}  // namespace gmt

#endif  // GMT_LIB_PLATFORM_DRIVER_PARAM_LAYOUTS_H_
