#include "lib/gpu_fault/fault_explanation.h"

#include <cxxabi.h>
#include <stdlib.h>

#include <map>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/gpu_fault/elf_reader.h"
#include "lib/gpu_fault/gpu_exception.h"
#include "lib/gpu_fault/nvdisasm.h"
#include "lib/gpu_fault/sass_operand.h"

namespace gmt::gpu_fault {
namespace {

constexpr uint8_t kSymbolTypeFunction = 2;

std::string Demangle(const std::string& symbol) {
  int status = 0;
  char* demangled =
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return symbol;
  std::string out(demangled);
  free(demangled);
  return out;
}

// What one module's image says, read once however many warps ran in it.
struct ModuleFacts {
  std::string error;  // why nothing below could be read
  std::vector<ElfSymbol> functions;
  absl::Span<const uint8_t> debug_line;
  absl::Span<const uint8_t> image;
  // Disassembly by function symbol index (or the error that stopped it).
  std::map<uint32_t, absl::StatusOr<absl::flat_hash_map<uint64_t, std::string>>>
      disassembly;
};

ModuleFacts ReadModuleFacts(const DumpModule& module) {
  ModuleFacts facts;
  facts.image = module.image;
  absl::StatusOr<ElfReader> elf = ElfReader::Open(module.image);
  if (!elf.ok()) {
    facts.error =
        absl::StrCat("its image is unreadable: ", elf.status().message());
    return facts;
  }
  absl::StatusOr<std::vector<ElfSymbol>> symbols = elf->Symbols();
  if (!symbols.ok()) {
    facts.error = absl::StrCat("its symbols are unreadable: ",
                               symbols.status().message());
    return facts;
  }
  for (ElfSymbol& s : *symbols) {
    if (s.type == kSymbolTypeFunction) facts.functions.push_back(std::move(s));
  }
  if (const ElfSection* line = elf->FindSection(".debug_line")) {
    absl::StatusOr<absl::Span<const uint8_t>> b = elf->SectionBytes(*line);
    if (b.ok()) facts.debug_line = *b;
  }
  return facts;
}

const ElfSymbol* FunctionAt(const ModuleFacts& facts, uint64_t pc) {
  for (const ElfSymbol& f : facts.functions) {
    if (f.value <= pc && pc - f.value < f.size) return &f;
  }
  return nullptr;
}

// The source line at `pc` from the module's line table, if it has one; a
// damaged table is a note.
std::optional<SourceLine> LineAt(const ModuleFacts& facts, uint64_t pc,
                                 const std::string& symbol,
                                 std::vector<std::string>* notes) {
  if (facts.debug_line.empty()) return std::nullopt;
  absl::StatusOr<std::optional<SourceLine>> line =
      LookUpSourceLine(facts.debug_line, pc);
  if (line.ok()) return *line;
  notes->push_back(
      absl::StrCat("line table of ", symbol, ": ", line.status().message()));
  return std::nullopt;
}

uint64_t FaultKey(uint32_t device, uint32_t sm) {
  return (static_cast<uint64_t>(device) << 32) | sm;
}

}  // namespace

GpuFaultExplanation ExplainGpuFaults(const GpuCoreDump& dump,
                                     const ExplainOptions& options) {
  GpuFaultExplanation out;
  out.metadata = dump.metadata();

  absl::flat_hash_map<uint64_t, const DumpSmException*> sm_exception;
  for (const DumpSmException& e : dump.sm_exceptions()) {
    sm_exception.emplace(FaultKey(e.device, e.sm), &e);
  }

  // 1. Warps the dump names as faulting: an errorPC, or lanes with an
  // exception.
  absl::flat_hash_map<uint64_t, bool> sm_has_warp;
  for (const DumpWarp& w : dump.warps()) {
    std::vector<FaultingLane> lanes;
    uint32_t exception = 0;
    for (const DumpLane& l : w.lanes) {
      if (l.exception == 0) continue;
      if (exception == 0) exception = l.exception;
      lanes.push_back(FaultingLane{l.lane, l.thread_idx, std::nullopt});
    }
    if (!w.error_pc_valid && lanes.empty()) continue;
    WarpFault f;
    f.device = w.device;
    f.sm = w.sm;
    f.warp_id = w.warp_id;
    f.block_idx = w.block_idx;
    auto sm = sm_exception.find(FaultKey(w.device, w.sm));
    if (exception == 0 && sm != sm_exception.end()) {
      exception = sm->second->exception;
    }
    f.exception = exception;
    if (w.error_pc_valid) {
      f.error_pc = w.error_pc;
    } else if (sm != sm_exception.end()) {
      f.error_pc = sm->second->error_pc;
    }
    if (lanes.empty()) {  // errorPC without a lane exception: all valid lanes
      for (const DumpLane& l : w.lanes) {
        lanes.push_back(FaultingLane{l.lane, l.thread_idx, std::nullopt});
      }
    }
    f.lanes = std::move(lanes);
    sm_has_warp[FaultKey(w.device, w.sm)] = true;
    out.warps.push_back(std::move(f));
  }

  // 2. SMs that recorded an exception but no warp: the warps that stand at
  // its errorPC or one instruction past it are the ones that ran it (every
  // thread of a kernel can fault at once, and the driver then keeps the SM's
  // record only).
  for (const DumpSmException& e : dump.sm_exceptions()) {
    if (sm_has_warp.contains(FaultKey(e.device, e.sm))) continue;
    const DumpDevice* device = dump.FindDevice(e.device);
    const uint64_t step = device != nullptr && device->instruction_size
                              ? device->instruction_size
                              : 16;
    bool any = false;
    for (const DumpWarp& w : dump.warps()) {
      if (w.device != e.device || w.sm != e.sm || !e.error_pc) continue;
      WarpFault f;
      for (const DumpLane& l : w.lanes) {
        if (l.pc == *e.error_pc || l.pc == *e.error_pc + step) {
          f.lanes.push_back(FaultingLane{l.lane, l.thread_idx, std::nullopt});
        }
      }
      if (f.lanes.empty()) continue;
      f.device = w.device;
      f.sm = w.sm;
      f.warp_id = w.warp_id;
      f.block_idx = w.block_idx;
      f.exception = e.exception;
      f.error_pc = e.error_pc;
      f.inferred_from_sm = true;
      out.warps.push_back(std::move(f));
      any = true;
    }
    if (!any) {
      SmOnlyFault s;
      s.device = e.device;
      s.sm = e.sm;
      s.exception = e.exception;
      s.error_pc = e.error_pc;
      out.sm_only.push_back(std::move(s));
    }
  }

  // 3. Kernel, line and address of each, module facts read once.
  std::optional<std::string> nvdisasm;
  if (options.disassemble) nvdisasm = FindNvdisasm(options.nvdisasm);
  absl::flat_hash_map<const DumpModule*, std::unique_ptr<ModuleFacts>> modules;
  // Index of each faulting warp's DumpWarp, to reach its registers.
  absl::flat_hash_map<uint64_t, std::vector<const DumpWarp*>> warps_by_sm;
  for (const DumpWarp& w : dump.warps()) {
    warps_by_sm[FaultKey(w.device, w.sm)].push_back(&w);
  }
  for (WarpFault& f : out.warps) {
    const DumpWarp* warp = nullptr;
    for (const DumpWarp* w : warps_by_sm[FaultKey(f.device, f.sm)]) {
      if (w->warp_id == f.warp_id && w->block_idx == f.block_idx) warp = w;
    }
    const DumpGrid* grid =
        warp != nullptr ? dump.FindGrid(warp->device, warp->grid_id) : nullptr;
    if (out.device_name.empty()) {
      if (const DumpDevice* d = dump.FindDevice(f.device)) {
        out.device_name = d->name;
      }
    }
    if (grid == nullptr) {
      f.address_not_derived = "the dump has no grid for this warp";
      continue;
    }
    f.grid_dim = grid->grid_dim;
    f.block_dim = grid->block_dim;
    f.params.assign(grid->params.begin(), grid->params.end());
    const DumpModule* module =
        dump.FindModule(grid->device, grid->module_handle);
    if (module == nullptr || module->image.empty()) {
      f.address_not_derived = "the dump has no image of the kernel's module";
      continue;
    }
    std::unique_ptr<ModuleFacts>& facts = modules[module];
    if (!facts) facts = std::make_unique<ModuleFacts>(ReadModuleFacts(*module));
    if (!facts->error.empty()) {
      f.address_not_derived =
          absl::StrCat("the kernel's module: ", facts->error);
      continue;
    }
    const uint64_t pc = f.error_pc.value_or(grid->function_entry);
    const ElfSymbol* function = FunctionAt(*facts, pc);
    if (function == nullptr)
      function = FunctionAt(*facts, grid->function_entry);
    if (function != nullptr) {
      f.kernel_symbol = function->name;
      f.kernel = Demangle(function->name);
      if (f.error_pc) f.pc_offset = *f.error_pc - function->value;
    }
    if (f.error_pc) {
      f.source = LineAt(*facts, *f.error_pc, f.kernel_symbol, &out.notes);
    }

    // The address: the instruction at errorPC and this warp's registers.
    if (!f.error_pc) {
      f.address_not_derived = "the dump records no errorPC for this warp";
      continue;
    }
    if (!GpuExceptionIsAboutAnAddress(f.exception)) {
      f.address_not_derived = "the exception is not about a memory address";
      continue;
    }
    if (!options.disassemble) {
      f.address_not_derived = "decoding the instruction was turned off";
      continue;
    }
    if (!nvdisasm) {
      f.address_not_derived =
          options.nvdisasm.empty()
              ? "nvdisasm (CUDA toolkit) not found in PATH, $CUDA_HOME/bin "
                "or /usr/local/cuda/bin"
              : absl::StrCat("nvdisasm not executable at ", options.nvdisasm);
      continue;
    }
    if (function == nullptr) {
      f.address_not_derived = "no function symbol covers the errorPC";
      continue;
    }
    auto it = facts->disassembly.find(function->index);
    if (it == facts->disassembly.end()) {
      it = facts->disassembly
               .emplace(function->index,
                        DisassembleFunction(*nvdisasm, facts->image,
                                            function->index))
               .first;
    }
    if (!it->second.ok()) {
      f.address_not_derived = std::string(it->second.status().message());
      continue;
    }
    auto instruction = it->second->find(*f.error_pc);
    if (instruction == it->second->end()) {
      f.address_not_derived = absl::StrFormat(
          "nvdisasm printed no instruction at 0x%x", *f.error_pc);
      continue;
    }
    f.instruction = instruction->second;
    absl::StatusOr<MemoryOperand> operand = ParseMemoryOperand(f.instruction);
    if (!operand.ok()) {
      f.address_not_derived = std::string(operand.status().message());
      continue;
    }
    if (warp == nullptr) continue;
    for (FaultingLane& lane : f.lanes) {
      for (const DumpLane& l : warp->lanes) {
        if (l.lane != lane.lane) continue;
        absl::StatusOr<uint64_t> address =
            EvaluateAddress(*operand, l.registers, warp->uniform_registers);
        if (address.ok()) {
          lane.address = *address;
        } else if (f.address_not_derived.empty()) {
          f.address_not_derived = std::string(address.status().message());
        }
      }
    }
    if (!f.lanes.empty() && f.lanes.front().address) {
      f.address = f.lanes.front().address;
      f.address_not_derived.clear();
    }
  }

  // 4. Kernel and line of each SM-only record: the function that covers its
  // errorPC among the device's modules (no grid is left to name the module).
  for (SmOnlyFault& s : out.sm_only) {
    if (out.device_name.empty()) {
      if (const DumpDevice* d = dump.FindDevice(s.device)) {
        out.device_name = d->name;
      }
    }
    if (!s.error_pc) continue;
    for (const DumpModule& module : dump.modules()) {
      if (module.device != s.device || module.image.empty()) continue;
      std::unique_ptr<ModuleFacts>& facts = modules[&module];
      if (!facts)
        facts = std::make_unique<ModuleFacts>(ReadModuleFacts(module));
      const ElfSymbol* function = FunctionAt(*facts, *s.error_pc);
      if (function == nullptr) continue;
      s.kernel_symbol = function->name;
      s.kernel = Demangle(function->name);
      s.pc_offset = *s.error_pc - function->value;
      s.source = LineAt(*facts, *s.error_pc, s.kernel_symbol, &out.notes);
      break;
    }
  }
  return out;
}

}  // namespace gmt::gpu_fault
