// The JSON report (DESIGN §5). Other tools parse it: change it only by adding
// fields.
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "lib/clock.h"
#include "lib/report.h"

namespace gmt {
namespace {

using nlohmann::json;

std::string Hex(uint64_t value) { return absl::StrFormat("0x%x", value); }

json StackJson(StackId id, const StackTable& stacks) {
  json frames = json::array();
  auto it = stacks.find(id);
  if (it == stacks.end()) return frames;
  for (const SymbolizedFrame& f : it->second) {
    json frame = {{"address", Hex(f.address)},
                  {"function", f.function},
                  {"module", f.module}};
    if (!f.file.empty()) {
      frame["file"] = f.file;
      frame["line"] = f.line;
    }
    frames.push_back(std::move(frame));
  }
  return frames;
}

json AllocationJson(const AllocationRecord& a, const StackTable& stacks) {
  return {{"api", std::string(ApiName(a.api))},
          {"kind", std::string(MemoryKindName(a.kind))},
          {"address", Hex(a.address)},
          {"bytes", a.bytes},
          {"device", a.device},
          {"thread", a.thread},
          {"time_s", static_cast<double>(SinceStartNs(a.time_ns)) * 1e-9},
          {"stack", StackJson(a.stack, stacks)}};
}

json DeviceJson(const ReportData::Device& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"total_bytes", d.total_bytes},
          {"peak_bytes", d.peak_bytes},
          {"live_bytes", d.live_bytes},
          {"allocations", d.allocations},
          {"frees", d.frees},
          {"health",
           {{"available", false},
            {"reason", "NVML health checks are not part of this build"}}}};
}

}  // namespace

std::string RenderJson(const ReportData& data) {
  json out;
  out["tool"] = "gpumemtrace";
  out["version"] = data.version;
  out["pid"] = data.pid;
  out["argv"] = data.argv;
  out["reason"] = data.reason;
  out["devices"] = json::array();
  for (const ReportData::Device& d : data.devices) {
    out["devices"].push_back(DeviceJson(d));
  }
  out["host"] = {{"peak_bytes", data.host.peak_bytes},
                 {"live_bytes", data.host.live_bytes},
                 {"allocations", data.host.allocations},
                 {"frees", data.host.frees}};
  out["summary"] = {{"allocations", data.summary.allocations},
                    {"frees", data.summary.frees},
                    {"live_bytes_at_exit", data.summary.live_bytes_at_exit},
                    {"errors", data.summary.errors},
                    {"leaks", data.summary.leaks},
                    {"leaked_bytes", data.summary.leaked_bytes},
                    {"leak_sites", data.leaks.size()},
                    {"untracked_frees", data.summary.untracked_frees}};
  out["leak_check"] = data.leak_check;
  out["leaks"] = json::array();
  for (const ReportData::Leak& leak : data.leaks) {
    json j = {{"api", std::string(ApiName(leak.api))},
              {"kind", std::string(MemoryKindName(leak.kind))},
              {"bytes", leak.bytes},
              {"count", leak.count},
              {"address", Hex(leak.address)},
              {"device", leak.device},
              {"stack", StackJson(leak.stack, data.stacks)}};
    if (!leak.released_by.empty()) j["released_by"] = leak.released_by;
    out["leaks"].push_back(std::move(j));
  }
  out["errors"] = json::array();
  for (const ErrorRecord& e : data.errors) {
    json j = {{"kind", std::string(ErrorKindName(e.kind))},
              {"api", std::string(ApiName(e.api))},
              {"address", Hex(e.address)},
              {"offset", e.offset},
              {"bytes", e.bytes},
              {"detail", e.detail},
              {"cuda_result", e.cuda_result},
              {"cuda_error", e.cuda_result_name},
              {"thread", e.thread},
              {"time_s", static_cast<double>(SinceStartNs(e.time_ns)) * 1e-9},
              {"kernels", e.kernels},
              {"stack", StackJson(e.stack, data.stacks)}};
    if (e.has_range) {
      j["first_offset"] = e.first_offset;
      j["last_offset"] = e.last_offset;
      j["changed_bytes"] = e.changed_bytes;
      j["kernels_omitted"] = e.kernels_omitted;
    }
    if (!e.check.empty()) j["check"] = e.check;
    if (!e.call.empty()) j["call"] = e.call;
    if (e.allocation)
      j["allocation"] = AllocationJson(*e.allocation, data.stacks);
    if (e.previous_free) {
      j["first_free"] = {
          {"api", std::string(ApiName(e.previous_free->free_api))},
          {"thread", e.previous_free->free_thread},
          {"stack", StackJson(e.previous_free->free_stack, data.stacks)}};
    }
    out["errors"].push_back(std::move(j));
  }
  out["errors_dropped"] = data.errors_dropped;
  out["guard"] = {{"enabled", data.guard.enabled},
                  {"check", data.guard.check},
                  {"guarded", data.guard.guarded},
                  {"unguarded_oom", data.guard.unguarded_oom},
                  {"unguarded_capture", data.guard.unguarded_capture},
                  {"checks", data.guard.checks},
                  {"check_failures", data.guard.check_failures},
                  {"fill_failures", data.guard.fill_failures},
                  {"bytes_checked", data.guard.bytes_checked},
                  {"quarantine_bytes", data.guard.quarantine_bytes},
                  {"evicted", data.guard.evicted}};
  out["notes"] = data.notes;
  // Invalid UTF-8 (odd symbol names, argv) is replaced rather than thrown on:
  // the report must never be lost to an encoding error.
  return out.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace gmt
