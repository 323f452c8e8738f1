// `gpumemtrace run --explain-faults`: the program runs with the library's
// explain_faults option, which arms the driver's GPU core dump at load and
// explains the dump in the crash report at the driver's abort (the faulting
// address placed among the program's blocks; lib/gpu_fault,
// docs/gpu-faults.md). The launcher becomes the program as in every run.
//
// It refuses when a CUDA_COREDUMP_* variable is set already: that dump is
// the user's, and where it goes is theirs to say. It does not inject the
// library through CUPTI in this mode: with CUDA_INJECTION64_PATH set as well,
// the H200's driver (580) wrote no GPU core dump at the fault.
#ifndef GMT_CLI_EXPLAIN_FAULTS_H_
#define GMT_CLI_EXPLAIN_FAULTS_H_

#include <string>

namespace gmt::cli {

// The library's options for --explain-faults [--keep-gpu-dump].
std::string ExplainOptionsText(bool keep_dump);

// "" when the faults can be explained; else why not (a CUDA_COREDUMP_*
// variable already set), for the launcher's error.
std::string WhyFaultsCannotBeExplained();

}  // namespace gmt::cli

#endif  // GMT_CLI_EXPLAIN_FAULTS_H_
