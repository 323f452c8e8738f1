#include "lib/gpu_fault/fault_text.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "lib/gpu_fault/gpu_exception.h"

namespace gmt::gpu_fault {
namespace {

std::string DimText(const Dim3& d) {
  return absl::StrFormat("(%d,%d,%d)", d.x, d.y, d.z);
}

// "(160,0,0)..(191,0,0), 32 threads" or "(0,0,0)" for one.
std::string ThreadsText(const std::vector<FaultingLane>& lanes) {
  if (lanes.empty()) return "none recorded";
  if (lanes.size() == 1) return DimText(lanes.front().thread_idx);
  return absl::StrFormat("%s..%s, %d threads",
                         DimText(lanes.front().thread_idx),
                         DimText(lanes.back().thread_idx), lanes.size());
}

// "scatter(float*, int const*, int) at _Z7scatterPfPKii+0xf0 (PC 0x...)
// (wild_write.cu:5)", of a faulting warp or an SM-only record.
template <typename Fault>
std::string WhereText(const Fault& f) {
  std::string where = f.kernel.empty() ? "an unknown kernel" : f.kernel;
  if (f.error_pc) {
    if (f.pc_offset && !f.kernel_symbol.empty()) {
      absl::StrAppendFormat(&where, " at %s+0x%x (PC 0x%x)", f.kernel_symbol,
                            *f.pc_offset, *f.error_pc);
    } else {
      absl::StrAppendFormat(&where, " at PC 0x%x", *f.error_pc);
    }
  }
  if (f.source) {
    absl::StrAppend(&where, " (", f.source->Path(), ":", f.source->line, ")");
  }
  return where;
}

}  // namespace

std::string RenderGpuFaultText(const GpuFaultExplanation& e,
                               const FaultTextOptions& options) {
  std::string out = "GPU fault, read from the GPU core dump";
  if (!e.device_name.empty()) absl::StrAppend(&out, " (", e.device_name);
  if (e.metadata) {
    absl::StrAppendFormat(&out, "%sdriver %d.%d, CUDA %d.%d",
                          e.device_name.empty() ? " (" : ", ",
                          e.metadata->driver_major, e.metadata->driver_minor,
                          e.metadata->cuda_major, e.metadata->cuda_minor);
  }
  if (!e.device_name.empty() || e.metadata) absl::StrAppend(&out, ")");
  absl::StrAppend(&out, ":\n");
  if (e.warps.empty() && e.sm_only.empty()) {
    absl::StrAppend(&out,
                    "  the dump records no exception on any warp or SM\n");
  }
  int shown = 0;
  for (const WarpFault& f : e.warps) {
    if (shown == options.max_warps) break;
    ++shown;
    absl::StrAppendFormat(&out, "  %s: %s\n", GpuExceptionName(f.exception),
                          GpuExceptionMeaning(f.exception));
    absl::StrAppend(&out, "    in ", WhereText(f), "\n");
    std::string launch;
    if (f.grid_dim && f.block_dim) {
      launch = absl::StrCat(" of grid ", DimText(*f.grid_dim), " x block ",
                            DimText(*f.block_dim));
    }
    absl::StrAppendFormat(&out,
                          "    block %s, threads %s%s (device %d, SM %d, "
                          "warp %d)\n",
                          DimText(f.block_idx), ThreadsText(f.lanes), launch,
                          f.device, f.sm, f.warp_id);
    if (f.inferred_from_sm) {
      absl::StrAppend(&out,
                      "    (the dump names no faulting warp, only the SM's "
                      "exception: this warp stood at that PC or just past "
                      "it)\n");
    }
    if (!f.instruction.empty()) {
      absl::StrAppend(&out, "    instruction: ", f.instruction, "\n");
    }
    if (!f.address) {
      absl::StrAppend(&out, "    address not derived: ",
                      f.address_not_derived.empty() ? "unknown reason"
                                                    : f.address_not_derived,
                      "\n");
      continue;
    }
    // A warp-wide exception does not say which lane's address was refused:
    // with blocks to compare, the first lane outside every tracked block is
    // the one to show; else the first lane.
    const FaultingLane* shown_lane = &f.lanes.front();
    std::optional<AddressPlace> place;
    if (options.have_blocks) {
      for (const FaultingLane& l : f.lanes) {
        if (!l.address) continue;
        AddressPlace p = LocateAddress(*l.address, options.blocks);
        if (p.kind != AddressPlace::Kind::kInside) {
          shown_lane = &l;
          place = std::move(p);
          break;
        }
      }
      if (!place) place = LocateAddress(*shown_lane->address, options.blocks);
    } else if (*shown_lane->address < kNullPointerWindow) {
      place = LocateAddress(*shown_lane->address, {});
    }
    absl::StrAppendFormat(&out, "    address 0x%x (thread %s)",
                          *shown_lane->address,
                          DimText(shown_lane->thread_idx));
    if (place) {
      BlockNaming naming;
      naming.params = f.params;
      naming.arguments = options.arguments;
      naming.site = options.site;
      absl::StrAppend(&out, ": ", DescribeAddressPlace(*place, naming));
    }
    absl::StrAppend(&out, "\n");
    uint64_t low = *shown_lane->address, high = low;
    int count = 0;
    for (const FaultingLane& l : f.lanes) {
      if (!l.address) continue;
      low = std::min(low, *l.address);
      high = std::max(high, *l.address);
      ++count;
    }
    if (count > 1 && low != high) {
      absl::StrAppendFormat(&out,
                            "    the %d threads' addresses span 0x%x..0x%x\n",
                            count, low, high);
    }
  }
  if (static_cast<size_t>(shown) < e.warps.size()) {
    absl::StrAppendFormat(&out, "  ... and %d more faulting warps",
                          e.warps.size() - shown);
    // The blocks they are in, a few: enough to see the pattern.
    std::vector<std::string> blocks;
    for (size_t i = shown; i < e.warps.size(); ++i) {
      std::string b = DimText(e.warps[i].block_idx);
      if (std::find(blocks.begin(), blocks.end(), b) == blocks.end()) {
        blocks.push_back(std::move(b));
      }
    }
    const size_t listed = std::min<size_t>(blocks.size(), 4);
    absl::StrAppend(
        &out, " (in blocks ",
        absl::StrJoin(blocks.begin(),
                      blocks.begin() + static_cast<std::ptrdiff_t>(listed),
                      " "),
        blocks.size() > listed
            ? absl::StrCat(" and ", blocks.size() - listed, " more)")
            : ")",
        "\n");
  }
  // The SM kept the exception and its errorPC, but its warps exited before
  // the dump: the kernel and line are known, the block, threads and address
  // are not.
  // SMs that recorded the same exception at the same PC read as one fault.
  for (size_t i = 0; i < e.sm_only.size();) {
    const SmOnlyFault& s = e.sm_only[i];
    std::vector<uint32_t> sms;
    size_t j = i;
    for (; j < e.sm_only.size(); ++j) {
      const SmOnlyFault& t = e.sm_only[j];
      if (t.device != s.device || t.exception != s.exception ||
          t.error_pc != s.error_pc) {
        break;
      }
      sms.push_back(t.sm);
    }
    i = j;
    absl::StrAppendFormat(&out, "  %s: %s\n", GpuExceptionName(s.exception),
                          GpuExceptionMeaning(s.exception));
    absl::StrAppend(&out, "    in ", WhereText(s), "\n");
    const size_t listed = std::min<size_t>(sms.size(), 4);
    std::string by = absl::StrCat(
        sms.size() == 1 ? "SM " : "SMs ",
        absl::StrJoin(sms.begin(),
                      sms.begin() + static_cast<std::ptrdiff_t>(listed), ", "),
        sms.size() > listed
            ? absl::StrCat(" and ", sms.size() - listed, " more")
            : "");
    absl::StrAppendFormat(&out,
                          "    recorded by %s of device %d; no warp left to "
                          "show (they exited), so the block, threads and "
                          "address are not known\n",
                          by, s.device);
  }
  for (const std::string& note : e.notes) {
    absl::StrAppend(&out, "  note: ", note, "\n");
  }
  return out;
}

}  // namespace gmt::gpu_fault
