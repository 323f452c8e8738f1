// The toolkit's disassembler, nvdisasm, run on a module image taken from a
// GPU core dump to read the instruction at a faulting PC.
//
// The image is written to a private temporary file (mkstemp, removed after)
// and nvdisasm runs as a child process (fork + execv, its output through a
// pipe): allocation, fork and waiting make this unfit for a signal handler,
// so the crash path calls it from a forked reader or after the handler. It
// starts no threads.
#ifndef GMT_LIB_GPU_FAULT_NVDISASM_H_
#define GMT_LIB_GPU_FAULT_NVDISASM_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gmt::gpu_fault {

// Where nvdisasm is: `explicit_path` when not empty (checked to be
// executable), else the first of $PATH, $CUDA_HOME/bin, $CUDA_PATH/bin,
// /usr/local/cuda/bin that has it; nullopt when none does.
std::optional<std::string> FindNvdisasm(const std::string& explicit_path);

// Disassembles the function whose .symtab index is `symbol_index` in the
// cubin `image`: instruction text ("STG.E desc[UR4][R4.64], R7") by address
// (the addresses nvdisasm prints: the relocated ones in a dump's image).
absl::StatusOr<absl::flat_hash_map<uint64_t, std::string>> DisassembleFunction(
    const std::string& nvdisasm, absl::Span<const uint8_t> image,
    uint32_t symbol_index);

// Parses nvdisasm's text (exposed for tests): each line
// "        /*7fd94f7a00f0*/   STG.E desc[UR4][R4.64], R7 ;" becomes one
// entry, the address read as hex, the text without the trailing ';'.
absl::flat_hash_map<uint64_t, std::string> ParseDisassembly(
    absl::string_view text);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_NVDISASM_H_
