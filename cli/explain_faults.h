// `gpumemtrace run --explain-faults`: the program runs with the driver's GPU
// core dump armed, and the launcher explains the dump after the program dies.
//
// The driver writes a lightweight dump (no memory contents: the five skip_*
// flags, about 370 KB, well under a second on an H200) when a kernel raises
// a GPU exception, then aborts the program (SIGABRT, exit 134), as it does
// with the dump on. The launcher therefore does not exec the program but
// forks it and waits; the dump goes to a folder of the launcher's own
// (mkdtemp). The library is told (explain_faults, gpu_dump_dir,
// keep_gpu_dump): its crash report reads the dump and places the faulting
// address among the program's blocks, then removes it (or keeps it beside a
// marker). A dump the library did not explain (it never loaded, or its
// report did not finish) the launcher reads with lib/gpu_fault, prints, and
// removes (unless keep_dump: then its path and the cuda-gdb command that
// opens it). The launcher then ends as the program did: the same exit code,
// or the same signal.
//
// Never skip_abort: with it the driver swallows the fault, and the program's
// later CUDA calls return success while its results are garbage (measured on
// the H200).
#ifndef GMT_CLI_EXPLAIN_FAULTS_H_
#define GMT_CLI_EXPLAIN_FAULTS_H_

#include <string>
#include <vector>

namespace gmt::cli {

// The library's options that hand it the dump armed into `dump_dir`.
std::string ExplainOptionsText(const std::string& dump_dir, bool keep_dump);

// Runs `program` (a path) with `argv` in this process's environment plus
// the dump's, waits for it, explains any dump it left, and returns what
// RunMain returns: the program's exit code; a program killed by a signal
// makes this process die by the same signal. `keep_dump`: the dump stays.
int RunExplainingFaults(const std::string& program,
                        const std::vector<std::string>& argv, bool keep_dump);

}  // namespace gmt::cli

#endif  // GMT_CLI_EXPLAIN_FAULTS_H_
