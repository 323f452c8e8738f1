// GpuCoreDump: what a CUDA GPU core dump holds, read into plain data.
//
// The driver writes the dump at a GPU exception when armed
// (CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 or cuCoredumpSetAttributeGlobal). It
// is an ELF core file (OS/ABI 0x33, machine EM_CUDA) whose sections are
// tables, named and linked as a tree (the format is public: cuda-gdb's
// cudacoredump.h):
//
//   .cudbg.devtbl                      devices
//   ├─ .cudbg.ctxtbl.devD              contexts
//   │  └─ .cudbg.modtbl.devD.ctxC      modules ── .cudbg.relfimg.devD.ctxC
//   │                                             (the relocated cubin of one
//   │                                              module; sh_info = its row)
//   ├─ .cudbg.gridtbl.devD             grids ──── .cudbg.param.devD.gridG
//   └─ .cudbg.smtbl.devD               SMs (and, since r555, the SM's
//   exception)
//      └─ .cudbg.ctatbl.devD.smS       blocks on that SM
//         └─ .cudbg.wptbl...ctaB       warps (errorPC, errorPCValid)
//            ├─ .cudbg.uregs...wpW     uniform registers
//            └─ .cudbg.lntbl...wpW     lanes (threadIdx, PC, exception)
//               └─ .cudbg.regs...lnL   registers of one lane
//
// A child names its parent table by sh_link (the parent's section index) and
// its row in that table by sh_info; the names are not needed. Rows grew over
// driver versions, so each table gives its row size (sh_entsize) and a field
// past a row's end reads as absent, never from the next row.
//
// ReadGpuCoreDump() checks every offset: a truncated or damaged dump is an
// absl::Status naming what is wrong, never a crash. It allocates and reads
// memory, so it is not for a signal handler: the crash path runs it in a
// forked child or after the handler. No threads.
#ifndef GMT_LIB_GPU_FAULT_GPU_CORE_DUMP_H_
#define GMT_LIB_GPU_FAULT_GPU_CORE_DUMP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gmt::gpu_fault {

struct Dim3 {
  uint32_t x = 0, y = 0, z = 0;
  bool operator==(const Dim3& o) const {
    return x == o.x && y == o.y && z == o.z;
  }
};

struct DumpDevice {
  uint32_t index = 0;   // row in the device table
  std::string name;     // "NVIDIA H200"
  std::string sm_type;  // "sm_90"
  uint32_t sm_major = 0, sm_minor = 0;
  uint32_t num_sms = 0;
  uint32_t instruction_size = 0;  // bytes, 16 since Volta
};

// A module loaded in a context, with its relocated cubin: code at the
// addresses it ran at, symbols, and line tables when built with line info.
struct DumpModule {
  uint32_t device = 0;
  uint32_t context = 0;  // row in the device's context table
  uint32_t row = 0;      // row in the context's module table
  uint64_t handle = 0;
  absl::Span<const uint8_t> image;  // empty when the dump has none
};

struct DumpGrid {
  uint32_t device = 0;
  uint32_t row = 0;
  uint64_t grid_id = 0;
  uint64_t context_id = 0;
  uint64_t function_entry = 0;  // the kernel's first instruction
  uint64_t module_handle = 0;
  Dim3 grid_dim, block_dim;
  // The kernel's parameter buffer as launched (empty when not dumped).
  absl::Span<const uint8_t> params;
};

struct DumpLane {
  uint32_t lane = 0;
  Dim3 thread_idx;
  uint64_t pc = 0;  // where the lane stood when the dump was written
  uint32_t exception = 0;
  std::vector<uint32_t> registers;  // R0, R1, ... as dumped
};

struct DumpWarp {
  uint32_t device = 0;
  uint32_t sm = 0;  // the SM's id
  uint32_t warp_id = 0;
  uint64_t grid_id = 0;
  Dim3 block_idx;
  bool error_pc_valid = false;
  uint64_t error_pc = 0;  // the faulting instruction, when valid
  uint32_t valid_lanes = 0;
  uint32_t active_lanes = 0;
  std::vector<uint32_t> uniform_registers;  // UR0, UR1, ...
  std::vector<DumpLane> lanes;
};

// An SM's own record of an exception (driver r555 on): kept even when the
// faulting warps exited before the dump, as in a kernel where every thread
// faults at once.
struct DumpSmException {
  uint32_t device = 0;
  uint32_t sm = 0;
  uint32_t exception = 0;
  std::optional<uint64_t> error_pc;
};

struct DumpMetadata {
  uint32_t driver_major = 0, driver_minor = 0;  // 580, 159
  uint32_t cuda_major = 0, cuda_minor = 0;      // 13, 0
};

class GpuCoreDump {
 public:
  GpuCoreDump(GpuCoreDump&&) = default;
  GpuCoreDump& operator=(GpuCoreDump&&) = default;
  GpuCoreDump(const GpuCoreDump&) = delete;
  GpuCoreDump& operator=(const GpuCoreDump&) = delete;

  const std::vector<DumpDevice>& devices() const { return devices_; }
  const std::vector<DumpModule>& modules() const { return modules_; }
  const std::vector<DumpGrid>& grids() const { return grids_; }
  // Every warp of every block resident on an SM, in table order (device, SM,
  // block, warp).
  const std::vector<DumpWarp>& warps() const { return warps_; }
  const std::vector<DumpSmException>& sm_exceptions() const {
    return sm_exceptions_;
  }
  const std::optional<DumpMetadata>& metadata() const { return metadata_; }

  const DumpGrid* FindGrid(uint32_t device, uint64_t grid_id) const;
  const DumpModule* FindModule(uint32_t device, uint64_t handle) const;
  const DumpDevice* FindDevice(uint32_t device) const;

 private:
  friend absl::StatusOr<GpuCoreDump> ReadGpuCoreDump(std::vector<uint8_t>);
  GpuCoreDump() = default;

  std::vector<uint8_t> bytes_;  // the spans above point into it
  std::vector<DumpDevice> devices_;
  std::vector<DumpModule> modules_;
  std::vector<DumpGrid> grids_;
  std::vector<DumpWarp> warps_;
  std::vector<DumpSmException> sm_exceptions_;
  std::optional<DumpMetadata> metadata_;
};

// Parses a whole dump held in memory (it takes the bytes: the model's spans
// point into them).
absl::StatusOr<GpuCoreDump> ReadGpuCoreDump(std::vector<uint8_t> bytes);

// Reads the file at `path` and parses it.
absl::StatusOr<GpuCoreDump> ReadGpuCoreDumpFile(const std::string& path);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_GPU_CORE_DUMP_H_
