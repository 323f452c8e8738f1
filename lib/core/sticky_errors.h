// Sticky CUDA errors: the codes after which a context is unusable and every
// later call in it fails the same way (an illegal address, a trap, ...). The
// runtime's cudaError_t and the driver's CUresult use the same numbers for
// these, so one table serves both.
#ifndef GMT_LIB_CORE_STICKY_ERRORS_H_
#define GMT_LIB_CORE_STICKY_ERRORS_H_

namespace gmt {

// The runtime name ("cudaErrorIllegalAddress") of sticky code `code`, or null
// when `code` is not a sticky error.
inline const char* StickyRuntimeErrorName(int code) {
  switch (code) {
    case 700:
      return "cudaErrorIllegalAddress";
    case 710:
      return "cudaErrorAssert";
    case 714:
      return "cudaErrorHardwareStackError";
    case 715:
      return "cudaErrorIllegalInstruction";
    case 716:
      return "cudaErrorMisalignedAddress";
    case 717:
      return "cudaErrorInvalidAddressSpace";
    case 718:
      return "cudaErrorInvalidPc";
    case 719:
      return "cudaErrorLaunchFailure";
    default:
      return nullptr;
  }
}

// The driver name ("CUDA_ERROR_ILLEGAL_ADDRESS"), or null.
inline const char* StickyDriverErrorName(int code) {
  switch (code) {
    case 700:
      return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 710:
      return "CUDA_ERROR_ASSERT";
    case 714:
      return "CUDA_ERROR_HARDWARE_STACK_ERROR";
    case 715:
      return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    case 716:
      return "CUDA_ERROR_MISALIGNED_ADDRESS";
    case 717:
      return "CUDA_ERROR_INVALID_ADDRESS_SPACE";
    case 718:
      return "CUDA_ERROR_INVALID_PC";
    case 719:
      return "CUDA_ERROR_LAUNCH_FAILED";
    default:
      return nullptr;
  }
}

inline bool IsStickyCudaError(int code) {
  return StickyRuntimeErrorName(code) != nullptr;
}

}  // namespace gmt

#endif  // GMT_LIB_CORE_STICKY_ERRORS_H_
