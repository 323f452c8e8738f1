#include "lib/report/report_crash.h"

#include "absl/strings/str_format.h"
#include "lib/core/clock.h"
#include "lib/report/block_fields.h"

namespace gmt {
namespace {

using nlohmann::json;

// The block with its stack's id (the stack itself is in the report's table).
json CrashBlockJson(const AllocationRecord& a) {
  json block = BlockJson(a);
  block["stack_id"] = a.stack;
  return block;
}

std::string BlockText(const AllocationRecord& a) {
  return absl::StrFormat(
      "%s 0x%x, %s (%s, %s)", ApiName(a.api), a.address, HumanBytes(a.bytes),
      MemoryKindName(a.kind),
      a.device < 0 ? std::string("host") : absl::StrCat("device ", a.device));
}

}  // namespace

json CrashJson(const ReportData& data) {
  const ReportData::Crash& c = data.crash;
  json out = {{"kind", c.kind}, {"thread", c.thread}};
  if (c.signal != 0) {
    out["signal"] = c.signal;
    out["signal_name"] = c.signal_name;
    out["code"] = c.code;
    out["code_name"] = c.code_name;
    out["fault_address"] =
        c.has_fault_address ? json(Hex(c.fault_address)) : json(nullptr);
    out["fault_block"] =
        c.has_fault_block ? CrashBlockJson(c.fault_block) : json(nullptr);
    if (c.has_fault_block) out["fault_offset"] = c.fault_offset;
    out["stack_id"] = c.stack != kNoStack ? json(c.stack) : json(nullptr);
  }
  if (!c.call.empty()) {
    out["call"] = c.call;
    out["cuda_result"] = c.cuda_result;
    out["cuda_error"] = c.cuda_result_name;
  }
  json kernels = json::array();
  for (const ReportData::Crash::Launch& k : c.recent_kernels) {
    kernels.push_back({{"name", k.name},
                       {"stream", Hex(k.stream)},
                       {"context", Hex(k.context)},
                       {"time_s", k.time_s}});
  }
  out["recent_kernels"] = std::move(kernels);
  out["launches_seen"] = c.launches_seen;
  if (!c.recent_kernels_note.empty()) {
    out["recent_kernels_note"] = c.recent_kernels_note;
  }
  out["live_blocks"] = c.live_blocks;
  out["live_bytes"] = c.live_bytes;
  json live = json::array();
  for (const AllocationRecord& a : c.live) live.push_back(CrashBlockJson(a));
  out["live_allocations"] = std::move(live);
  out["health"] = c.health_status;
  out["skipped"] = c.skipped;
  if (!c.gpu_fault.empty()) out["gpu_fault"] = c.gpu_fault;
  if (!c.gpu_dump_kept.empty()) out["gpu_dump_kept"] = c.gpu_dump_kept;
  return out;
}

std::vector<std::string> CrashTextLines(const ReportData& data) {
  const ReportData::Crash& c = data.crash;
  std::vector<std::string> lines;
  if (c.signal != 0) {
    std::string where =
        c.has_fault_address
            ? absl::StrFormat(" at address 0x%x", c.fault_address)
            : std::string();
    lines.push_back(absl::StrFormat(
        "CRASH: %s (%s)%s in thread %d", c.signal_name,
        c.code_name.empty() ? absl::StrCat("code ", c.code) : c.code_name,
        where, c.thread));
    if (c.has_fault_block) {
      lines.push_back(absl::StrFormat(
          "  the address is %s the block %s",
          c.fault_offset >= 0 &&
                  static_cast<uint64_t>(c.fault_offset) < c.fault_block.bytes
              ? absl::StrFormat("%d bytes into", c.fault_offset)
              : std::string("near"),
          BlockText(c.fault_block)));
    }
  }
  // The fault itself, from the driver's GPU core dump (explain_faults):
  // the lines come indented under their own heading.
  for (const std::string& line : c.gpu_fault) lines.push_back(line);
  if (!c.gpu_dump_kept.empty()) {
    lines.push_back(absl::StrFormat(
        "  the GPU core dump is kept at %s; cuda-gdb opens it: cuda-gdb "
        "-batch -ex 'target cudacore %s'",
        c.gpu_dump_kept, c.gpu_dump_kept));
  }
  if (!c.call.empty()) {
    lines.push_back(
        absl::StrFormat("CRASH: %s returned %s (%d): CUDA context "
                        "lost",
                        c.call, c.cuda_result_name, c.cuda_result));
  }
  if (c.recent_kernels.empty()) {
    lines.push_back(
        absl::StrCat("  recent kernels: none (", c.recent_kernels_note, ")"));
  } else {
    lines.push_back(absl::StrFormat(
        "  recent kernels (newest last, %d launches seen):", c.launches_seen));
    for (const ReportData::Crash::Launch& k : c.recent_kernels) {
      lines.push_back(absl::StrFormat("    %.6f s  %s  (stream 0x%x)", k.time_s,
                                      k.name, k.stream));
    }
  }
  lines.push_back(absl::StrFormat(
      "  live at the crash: %d blocks, %s%s", c.live_blocks,
      HumanBytes(c.live_bytes),
      c.live.size() < c.live_blocks
          ? absl::StrFormat(" (largest %d listed)", c.live.size())
          : std::string()));
  for (const AllocationRecord& a : c.live) {
    lines.push_back(absl::StrCat("    ", BlockText(a)));
  }
  for (const std::string& s : c.skipped) {
    lines.push_back(absl::StrCat("  not done: ", s));
  }
  return lines;
}

}  // namespace gmt
