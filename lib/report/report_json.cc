// The JSON report (DESIGN §5). Other tools parse it: change it only by adding
// fields.
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "lib/core/clock.h"
#include "lib/report/block_fields.h"
#include "lib/report/health_render.h"
#include "lib/report/leak_groups.h"
#include "lib/report/report.h"
#include "lib/report/report_crash.h"

namespace gmt {
namespace {

using nlohmann::json;

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

// The block with its allocation's time and stack.
json AllocationJson(const AllocationRecord& a, const StackTable& stacks) {
  json block = BlockJson(a);
  block["time_s"] = static_cast<double>(SinceStartNs(a.time_ns)) * 1e-9;
  block["stack"] = StackJson(a.stack, stacks);
  return block;
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
    // NVML health of the device (lib/report/health_render.h).
    out["devices"].back()["health"] =
        ReportDeviceHealthJson(data.health_read, data.health, d.index);
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
  // Suppressions (lib/report/suppressions.h): what the rules removed.
  out["summary"]["suppressed_errors"] = data.summary.suppressed_errors;
  out["summary"]["suppressed_leaks"] = data.summary.suppressed_leaks;
  // Leaked NVTX regions of pool allocators, included in
  // "leaks"; their bytes are not in "leaked_bytes" (inside the pools' blocks).
  uint64_t region_leaks = 0;
  uint64_t region_leaked_bytes = 0;
  for (const ReportData::Leak& leak : data.leaks) {
    if (leak.api != Api::kNvtxRegion) continue;
    region_leaks += leak.count;
    region_leaked_bytes += leak.bytes;
  }
  out["summary"]["nvtx_region_leaks"] = region_leaks;
  out["summary"]["nvtx_region_leaked_bytes"] = region_leaked_bytes;
  // Leaked cuMemAddressReserve ranges, included in "leaks"; address space,
  // not memory, so not in "leaked_bytes".
  const LeakedReservations reserved = CountLeakedReservations(data.leaks);
  out["summary"]["reservation_leaks"] = reserved.count;
  out["summary"]["reservation_leaked_bytes"] = reserved.bytes;
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
    if (!leak.suppression.empty()) j["suppression"] = leak.suppression;
    if (!leak.state.empty()) j["state"] = leak.state;
    if (!leak.reachable_via.empty()) j["reachable_via"] = leak.reachable_via;
    if (!leak.nvtx_range.empty()) j["nvtx_range"] = leak.nvtx_range;
    // A pool block's live NVTX regions; a region's pool.
    if (leak.nvtx_regions > 0) {
      j["nvtx_regions"] = leak.nvtx_regions;
      j["nvtx_region_bytes"] = leak.nvtx_region_bytes;
    }
    if (leak.api == Api::kNvtxRegion) {
      if (leak.pool_block != 0) {
        j["pool_block"] = Hex(leak.pool_block);
        j["pool_api"] = std::string(ApiName(leak.pool_api));
      } else {
        j["outside_block"] = true;
      }
      if (leak.heap != 0) j["heap"] = Hex(leak.heap);
      if (!leak.heap_name.empty()) j["heap_name"] = leak.heap_name;
      if (!leak.region_name.empty()) j["region_name"] = leak.region_name;
    }
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
      if (e.suspects_checked) j["suspects_checked"] = true;
    }
    if (!e.check.empty()) {
      j["check"] = e.check;
      if (e.has_range) j["found_by"] = "found " + FoundBy(e);
    }
    if (!e.call.empty()) j["call"] = e.call;
    if (!e.suppression.empty()) j["suppression"] = e.suppression;
    if (e.allocation)
      j["allocation"] = AllocationJson(*e.allocation, data.stacks);
    if (e.oom) {  // The out-of-memory diagnosis
      const OomDiagnosis& o = *e.oom;
      j["requested"] = o.requested;
      j["device"] = o.device;
      j["device_free"] = o.device_free ? json(*o.device_free) : json(nullptr);
      j["device_total"] =
          o.device_total ? json(*o.device_total) : json(nullptr);
      j["meminfo_status"] = o.meminfo_status;
      j["process_bytes"] = o.process_bytes;
      j["process_blocks"] = o.process_blocks;
      json holders = json::array();
      for (const OomDiagnosis::Holder& h : o.holders) {
        holders.push_back({{"bytes", h.bytes},
                           {"count", h.count},
                           {"api", std::string(ApiName(h.api))},
                           {"stack", StackJson(h.stack, data.stacks)}});
      }
      j["holders"] = std::move(holders);
      j["holders_omitted"] = o.holders_omitted;
      json others = json::array();
      for (const OomDiagnosis::OtherProcess& p : o.other_processes) {
        others.push_back({{"pid", p.pid},
                          {"name", p.name},
                          {"bytes", p.bytes ? json(*p.bytes) : json(nullptr)}});
      }
      j["other_processes"] = std::move(others);
      j["other_processes_status"] = o.other_processes_status;
      j["reading"] = o.reading;
      j["unreported_previous_burst"] = o.earlier_in_burst;
    }
    if (e.previous_free) {
      j["first_free"] = {
          {"api", std::string(ApiName(e.previous_free->free_api))},
          {"thread", e.previous_free->free_thread},
          {"stack", StackJson(e.previous_free->free_stack, data.stacks)}};
    }
    out["errors"].push_back(std::move(j));
  }
  out["errors_dropped"] = data.errors_dropped;
  // The OS thread ids of the thread numbers above, so that a report
  // re-read from this JSON prints "T2 (tid 4242)" as the run did.
  std::map<uint32_t, int> tids;
  if (data.thread_os_ids.has_value()) {
    tids = *data.thread_os_ids;
  } else {
    auto note = [&](uint32_t thread) {
      if (int tid = ReportThreadOsId(data, thread); tid != 0) {
        tids[thread] = tid;
      }
    };
    for (const ErrorRecord& e : data.errors) {
      note(e.thread);
      if (e.allocation) note(e.allocation->thread);
      if (e.previous_free) note(e.previous_free->free_thread);
    }
  }
  if (!tids.empty()) {
    json& list = out["thread_os_ids"] = json::array();
    for (const auto& [thread, tid] : tids) {
      list.push_back({{"thread", thread}, {"tid", tid}});
    }
  }
  out["suppressions"] = json::array();
  for (const ReportData::SuppressionUse& s : data.suppressions) {
    out["suppressions"].push_back({{"rule", s.rule},
                                   {"file", s.file},
                                   {"line", s.line},
                                   {"hits", s.hits}});
  }
  out["guard"] = {{"enabled", data.guard.enabled},
                  {"check", data.guard.check},
                  {"guarded", data.guard.guarded},
                  {"unguarded_oom", data.guard.unguarded_oom},
                  {"unguarded_capture", data.guard.unguarded_capture},
                  {"unguarded_refused", data.guard.unguarded_refused},
                  {"unguarded_shareable", data.guard.unguarded_shareable},
                  {"checks", data.guard.checks},
                  {"check_failures", data.guard.check_failures},
                  {"fill_failures", data.guard.fill_failures},
                  {"bytes_checked", data.guard.bytes_checked},
                  {"quarantine_bytes", data.guard.quarantine_bytes},
                  {"evicted", data.guard.evicted},
                  {"reused", data.guard.reused},
                  {"reused_in_flight", data.guard.reused_in_flight}};
  // Memory over time (viz): compact, bounded (a few thousand points per
  // device), so `gpumemtrace report FILE.json --format html` still plots it.
  if (data.timeline.recorded || data.timeline.from_json ||
      !data.timeline.series.empty()) {
    json series = json::object();
    for (const auto& [device, points] : data.timeline.series) {
      json p = json::array();
      for (const auto& point : points) {
        p.push_back({point.time_ns, point.live_bytes});
      }
      series[std::to_string(device)] = std::move(p);
    }
    out["timeline"] = {{"events_recorded", data.timeline.recorded_events},
                       {"events_dropped", data.timeline.dropped},
                       {"capacity", data.timeline.capacity},
                       {"series", std::move(series)}};
  }
  // The reachability scan at exit and the call sites that kept
  // growing while the program ran.
  const ReportData::Reachability& r = data.reachability;
  out["reachability"] = {{"ran", r.ran},
                         {"ms", r.ms},
                         {"bytes_scanned", r.bytes_scanned},
                         {"roots", r.roots},
                         {"heap_chunks", r.heap_chunks},
                         {"modules", r.modules},
                         {"modules_excluded", r.modules_excluded},
                         {"threads", r.threads},
                         {"threads_excluded", r.threads_excluded},
                         {"threads_unknown", r.threads_unknown},
                         {"truncated", r.truncated},
                         {"lost_bytes", r.lost_bytes},
                         {"lost_blocks", r.lost_blocks},
                         {"reachable_bytes", r.reachable_bytes},
                         {"reachable_blocks", r.reachable_blocks},
                         {"unknown_bytes", r.unknown_bytes},
                         {"unknown_blocks", r.unknown_blocks}};
  out["growth_samples"] = data.growth_samples;
  out["growth"] = json::array();
  for (const ReportData::Growth& g : data.growth) {
    out["growth"].push_back({{"stack_id", g.stack},
                             {"rises", g.rises},
                             {"first_bytes", g.first_bytes},
                             {"last_bytes", g.last_bytes},
                             {"first_s", g.first_s},
                             {"last_s", g.last_s},
                             {"stack", StackJson(g.stack, data.stacks)}});
  }
  // The whole NVML reading (versions, warnings, Xid events).
  if (data.health_read) out["health"] = HealthReadingJson(data.health);
  // The crash report.
  if (data.crash.present) out["crash"] = CrashJson(data);
  // Allocations by NVTX range (only when the program used NVTX).
  if (!data.nvtx_ranges.empty()) {
    json& ranges = out["nvtx_ranges"] = json::array();
    for (const ReportData::NvtxRange& r : data.nvtx_ranges) {
      ranges.push_back(json{{"range", r.name},
                            {"allocations", r.allocations},
                            {"bytes", r.bytes},
                            {"live_blocks", r.live_blocks},
                            {"live_bytes", r.live_bytes}});
    }
  }
  // The program's NVTX memory-API calls (pool allocators).
  if (data.nvtx_mem.used) {
    const ReportData::NvtxMem& m = data.nvtx_mem;
    json problems = json::object();
    for (const auto& [name, count] : m.problems) problems[name] = count;
    out["nvtx_mem"] = {{"heaps_registered", m.heaps_registered},
                       {"heaps_unregistered", m.heaps_unregistered},
                       {"heap_resets", m.heap_resets},
                       {"regions_registered", m.regions_registered},
                       {"regions_unregistered", m.regions_unregistered},
                       {"regions_resized", m.regions_resized},
                       {"regions_ended_by_heap", m.regions_ended_by_heap},
                       {"regions_ended_by_free", m.regions_ended_by_free},
                       {"live_heaps", m.live_heaps},
                       {"live_regions", m.live_regions},
                       {"live_region_bytes", m.live_region_bytes},
                       {"problems", std::move(problems)}};
  }
  out["notes"] = data.notes;
  // Invalid UTF-8 (odd symbol names, argv) is replaced rather than thrown on:
  // the report must never be lost to an encoding error.
  return out.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace gmt
