// What a GPU core dump says about a fault: per faulting warp, the exception,
// the kernel and the PC within it, the source line, the faulting lanes and,
// where the instruction and the registers determine it, the address.
//
//   absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDumpFile(path);
//   GpuFaultExplanation e = ExplainGpuFaults(*dump, ExplainOptions{});
//   std::string text = RenderGpuFaultText(e, blocks, TextOptions{});
//
// Facts the dump does not determine are left empty with the reason in words
// (`address_not_derived`), never guessed. Runs nvdisasm as a child process
// (nvdisasm.h): not for a signal handler; the crash path calls it from a
// forked reader or after the handler.
#ifndef GMT_LIB_GPU_FAULT_FAULT_EXPLANATION_H_
#define GMT_LIB_GPU_FAULT_FAULT_EXPLANATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/gpu_fault/gpu_core_dump.h"
#include "lib/gpu_fault/line_table.h"

namespace gmt::gpu_fault {

struct FaultingLane {
  uint32_t lane = 0;
  Dim3 thread_idx;
  std::optional<uint64_t> address;  // derived from this lane's registers
};

// One faulting warp.
struct WarpFault {
  uint32_t device = 0;
  uint32_t sm = 0;
  uint32_t warp_id = 0;
  uint32_t exception = 0;  // GpuException code
  // True when the dump named no faulting warp (only the SM's exception
  // record, as when every warp faulted at once) and this warp is taken as
  // faulting because it stood at the SM's errorPC or just past it.
  bool inferred_from_sm = false;
  std::optional<uint64_t> error_pc;
  Dim3 block_idx;
  std::optional<Dim3> grid_dim, block_dim;
  std::string kernel;         // demangled: "scatter(float*, int const*, int)"
  std::string kernel_symbol;  // as in the cubin: "_Z7scatterPfPKii"
  std::optional<uint64_t> pc_offset;  // error_pc - the kernel's first byte
  std::optional<SourceLine> source;
  std::string instruction;  // "STG.E desc[UR4][R4.64], R7", when decoded
  std::vector<FaultingLane> lanes;
  // The first faulting lane's address, or why there is none.
  std::optional<uint64_t> address;
  std::string address_not_derived;
  // The kernel's parameter buffer as dumped (for argument matching).
  std::vector<uint8_t> params;
};

// An SM that recorded an exception without any warp to show for it (the
// faulting warps exited before the dump was taken). Its errorPC still names
// the kernel and the line: the function that covers it in a module of the
// SM's device.
struct SmOnlyFault {
  uint32_t device = 0;
  uint32_t sm = 0;
  uint32_t exception = 0;
  std::optional<uint64_t> error_pc;
  std::string kernel;         // demangled, empty when no function covers it
  std::string kernel_symbol;  // as in the cubin
  std::optional<uint64_t> pc_offset;  // error_pc - the kernel's first byte
  std::optional<SourceLine> source;
};

struct GpuFaultExplanation {
  std::vector<WarpFault> warps;  // in dump order: the first is the focus
  std::vector<SmOnlyFault> sm_only;
  std::optional<DumpMetadata> metadata;
  std::string device_name;  // of the first faulting warp's device
  // Facts that could not be read at all (a module without symbols, ...).
  std::vector<std::string> notes;
};

struct ExplainOptions {
  // Decode the faulting instruction with nvdisasm (FindNvdisasm()).
  bool disassemble = true;
  std::string nvdisasm;  // an explicit path; empty: search (nvdisasm.h)
};

GpuFaultExplanation ExplainGpuFaults(const GpuCoreDump& dump,
                                     const ExplainOptions& options);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_FAULT_EXPLANATION_H_
