// Made-up reports for the saved-report reader (lib/report/report_json_parse.h):
// every section the JSON writer emits, each filled with values unlike the
// defaults (byte counts past 2^53, missing NVML figures, an Xid of a device
// NVML did not list, ...). Shared by
// tests/unit/report_json_parse_sections_test.cc and the launcher test
// (tests/cli/launcher_process_test.cc).
#ifndef GMT_TESTS_CLI_REPORT_PARSE_SAMPLE_H_
#define GMT_TESTS_CLI_REPORT_PARSE_SAMPLE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lib/core/clock.h"
#include "lib/health/health.h"
#include "lib/report/report.h"

namespace gmt::sample {

inline constexpr StackId kLeakStack = 7;
inline constexpr StackId kErrorStack = 8;
inline constexpr StackId kAllocStack = 9;
inline constexpr StackId kHolderStack = 10;
inline constexpr StackId kGrowthStack = 11;  // also a leak's call site
inline constexpr StackId kGrowthStack2 = 12;
inline constexpr StackId kUnsymbolized = 13;  // named, but no frames
inline constexpr uint64_t kHuge = (uint64_t{1} << 53) + 1;  // not a double
inline constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

inline std::vector<SymbolizedFrame> Frames(const std::string& function,
                                           int line) {
  return {SymbolizedFrame{0x401000 + static_cast<uintptr_t>(line), function,
                          "/src/train.cu", line, "train"},
          SymbolizedFrame{0x7f00dead0000, "", "", 0, "libfoo.so"}};
}

// The part every report has: devices, host, summary, a leak, guard.
inline ReportData Base() {
  ReportData d;
  d.version = "9.8.7";
  d.pid = 4242;
  d.argv = {"./train", "--epochs", "2"};
  d.reason = "exit";
  d.devices.push_back({0, "NVIDIA H200", kMax, kHuge, 8ull << 20, 5, 3});
  d.devices.push_back({1, "", 0, 4096, 0, 1, 1});
  d.host = {-1, "", 0, 1 << 20, 0, 1, 0};
  d.summary = {6, 4, 8ull << 20, 0, 3, kHuge, 1, 0, 0};
  ReportData::Leak leak;
  leak.api = Api::kCudaMalloc;
  leak.device = 0;
  leak.stack = kLeakStack;
  leak.bytes = kHuge;
  leak.count = 2;
  leak.address = 0x7f0000200000;
  d.leaks.push_back(leak);
  d.guard = {true, "sync", 10, 1, 2, 30, 0, 0, 1 << 20, 4096, 2};
  d.guard.reused = 7;
  d.guard.reused_in_flight = 3;
  d.stacks[kLeakStack] = Frames("make_buffers(int)", 12);
  d.notes = {"a note"};
  return d;
}

// ---- One function per section: each adds its section to `d`. ----

// Leaks split by reachability, with the scan's figures.
inline void AddReachability(ReportData& d) {
  d.leaks[0].state = "lost";
  ReportData::Leak reachable = d.leaks[0];
  reachable.state = "reachable";
  reachable.reachable_via = "globals of libfoo.so (word at 0x7f00dead0010)";
  reachable.bytes = 4096;
  reachable.count = 1;
  reachable.nvtx_range = "train/forward";
  reachable.suppression = "leak:make_buffers";
  d.leaks.push_back(reachable);
  ReportData::Leak unknown = d.leaks[0];
  unknown.state = "unknown";
  unknown.api = Api::kCudaMallocHost;
  unknown.kind = MemoryKind::kPinnedHost;
  unknown.device = -1;
  unknown.released_by = "cudaDeviceReset";
  unknown.bytes = 512;
  unknown.count = 1;
  d.leaks.push_back(unknown);
  ReportData::Reachability& r = d.reachability;
  r.ran = true;
  r.ms = 12.345678901234567;
  r.bytes_scanned = kMax;
  r.roots = 17;
  r.heap_chunks = 1234;
  r.modules = 9;
  r.modules_excluded = 4;
  r.threads = 3;
  r.threads_excluded = 2;
  r.threads_unknown = 1;
  r.truncated = true;
  r.lost_bytes = kHuge;
  r.lost_blocks = 2;
  r.reachable_bytes = 4096;
  r.reachable_blocks = 1;
  r.unknown_bytes = 512;
  r.unknown_blocks = 1;
}

inline void AddGrowth(ReportData& d) {
  d.growth_samples = 77;
  d.growth.push_back({kGrowthStack, 6, 1 << 20, kHuge, 1.25, 7.000000001});
  d.growth.push_back({kGrowthStack2, 5, 0, 3 << 20, 0.1, 0.30000000000000004});
  d.growth.push_back({kUnsymbolized, 5, 1, 2, 3, 4});
  d.stacks[kGrowthStack] = Frames("grow_cache(int)", 30);
  d.stacks[kGrowthStack2] = Frames("grow_more()", 31);
  // A leak of the same call site shares the stack id.
  ReportData::Leak leak = d.leaks[0];
  leak.stack = kGrowthStack;
  leak.bytes = 3 << 20;
  d.leaks.push_back(leak);
}

inline void AddOom(ReportData& d) {
  ErrorRecord e;
  e.kind = ErrorKind::kOom;
  e.api = Api::kCudaMalloc;
  e.bytes = uint64_t{64} << 30;
  e.stack = kErrorStack;
  e.thread = 2;
  e.time_ns = -SinceStartNs(0) + 2500000000;  // 2.5 s
  e.cuda_result = 2;
  e.cuda_result_name = "cudaErrorMemoryAllocation";
  e.detail = "cudaMalloc of 64.0 GiB failed on device 0";
  OomDiagnosis o;
  o.device = 0;
  o.requested = uint64_t{64} << 30;
  o.device_free = kHuge;
  o.device_total = std::nullopt;  // written as null
  o.meminfo_status = "cuMemGetInfo: total not known";
  o.process_bytes = kMax;
  o.process_blocks = 5;
  o.holders.push_back({4 << 20, 4, kHolderStack, Api::kCudaMalloc});
  o.holders.push_back({64 << 10, 1, kNoStack, Api::kCuMemAlloc});
  o.holders_omitted = 3;
  o.other_processes.push_back({1, "python3", uint64_t{4} << 30});
  o.other_processes.push_back({4243, "", std::nullopt});
  o.other_processes_status = "ok";
  o.reading = "the request is larger than the whole card";
  o.earlier_in_burst = 2;
  e.oom = o;
  d.errors.push_back(e);
  d.summary.errors += 1;
  d.stacks[kErrorStack] = Frames("AskTooMuch()", 40);
  d.stacks[kHolderStack] = Frames("FillDevice()", 20);
}

// Guard-zone and double-free errors, with the OS thread ids of their
// threads (as a report re-read from JSON has them).
inline void AddThreads(ReportData& d) {
  ErrorRecord twice;
  twice.kind = ErrorKind::kDoubleFree;
  twice.api = Api::kCudaFree;
  twice.address = 0x7f0000500000;
  twice.thread = 2;
  twice.stack = kErrorStack;
  twice.detail = "freed twice";
  AllocationRecord block;
  block.address = 0x7f0000500000;
  block.bytes = 4096;
  block.api = Api::kCudaMalloc;
  block.device = 0;
  block.thread = 1;
  block.stack = kAllocStack;
  block.time_ns = -SinceStartNs(0) + 500000000;
  twice.allocation = block;
  FreedRecord first;
  first.allocation = block;
  first.free_api = Api::kCudaFree;
  first.free_thread = 3;
  twice.previous_free = first;
  d.errors.push_back(twice);
  d.summary.errors += 1;
  d.thread_os_ids = std::map<uint32_t, int>{{1, 5001}, {2, 5002}, {3, 5003}};
  d.stacks[kErrorStack] = Frames("release_twice()", 41);
  d.stacks[kAllocStack] = Frames("alloc_one()", 10);
}

inline DeviceHealth SampleDeviceHealth(int index) {
  DeviceHealth h;
  h.nvml_index = index;
  h.name = "NVIDIA H200";
  h.uuid = "GPU-0000-" + std::to_string(index);
  h.memory_total = Reading<uint64_t>::Of(kMax);
  h.memory_used = Reading<uint64_t>::Of(kHuge);
  h.memory_reserved = Reading<uint64_t>::Missing("not supported");
  h.ecc_enabled = Reading<bool>::Of(true);
  h.ecc_pending_enabled = Reading<bool>::Of(false);
  h.ecc.volatile_corrected = Reading<uint64_t>::Of(5);
  h.ecc.volatile_uncorrected = Reading<uint64_t>::Of(0);
  h.ecc.aggregate_corrected = Reading<uint64_t>::Of(40);
  h.ecc.aggregate_uncorrected = Reading<uint64_t>::Of(2);
  h.retired_single_bit = Reading<uint32_t>::Of(1);
  h.retired_double_bit = Reading<uint32_t>::Of(0);
  h.retired_pending = Reading<bool>::Of(false);
  h.remapped_rows = Reading<RemappedRows>::Of({3, 1, true, false});
  h.gpu_temp_c = Reading<uint32_t>::Of(88);
  h.gpu_temp_slowdown_c = Reading<uint32_t>::Of(90);
  h.gpu_temp_shutdown_c = Reading<uint32_t>::Of(95);
  h.gpu_temp_max_c = Reading<uint32_t>::Of(87);
  h.memory_temp_c = Reading<uint32_t>::Missing("not supported");
  h.memory_temp_max_c = Reading<uint32_t>::Of(95);
  h.clock_event_reasons = Reading<uint64_t>::Of(kClockHwThermal | kClockIdle);
  return h;
}

inline void AddHealth(ReportData& d) {
  d.health_read = true;
  HealthReading& r = d.health;
  r.available = true;
  r.versions.driver = Reading<std::string>::Of("570.86.15");
  r.versions.driver_cuda = Reading<int>::Of(12080);
  r.versions.runtime_cuda = Reading<int>::Of(12090);  // too new: a warning
  r.versions.cu_driver_cuda = Reading<int>::Missing("not seen yet");
  r.devices.push_back(SampleDeviceHealth(0));
  DeviceHealth odd = SampleDeviceHealth(1);
  odd.remapped_rows = Reading<RemappedRows>::Missing("error: Unknown Error");
  odd.ecc_enabled = Reading<bool>::Missing("not supported");
  odd.clock_event_reasons = Reading<uint64_t>::Missing("");
  r.devices.push_back(odd);
  r.xid_watched = true;
  r.xid_status = "watched on 2 devices";
  r.xids.push_back({1.5, 0, 79});
  r.xids.push_back({2.25, 5, 48});  // a device NVML did not list
  r.xids.push_back({3.0, 1, 12345});
}

// The health section when NVML could not be had.
inline void AddHealthUnavailable(ReportData& d) {
  d.health_read = true;
  d.health.available = false;
  d.health.reason = "NVML not found (libnvidia-ml.so.1)";
  d.health.xid_status = "not watched (no NVML)";
}

inline void AddTimeline(ReportData& d) {
  ReportData::Timeline& t = d.timeline;
  t.recorded = true;
  t.capacity = 1 << 20;
  t.recorded_events = kHuge;
  t.dropped = 12;
  t.series[0] = {
      {0, 0}, {1000, kHuge}, {std::numeric_limits<int64_t>::max(), kMax}};
  t.series[-1] = {{-5, 1}};
  t.series[1] = {};
  // Events and live blocks are not in the JSON report (series only).
  ReportData::Timeline::Event e;
  e.time_ns = 10;
  e.bytes = 64;
  e.stack = kLeakStack;
  t.events.push_back(e);
}

inline void AddNvtxRanges(ReportData& d) {
  d.nvtx_ranges.push_back({"train/forward", 10, kHuge, 2, 4096});
  d.nvtx_ranges.push_back({"train", 1, 1, 0, 0});
}

// A pool allocator's NVTX heaps and regions.
inline void AddNvtxMem(ReportData& d) {
  d.leaks[0].nvtx_regions = 2;
  d.leaks[0].nvtx_region_bytes = 8192;
  ReportData::Leak region = d.leaks[0];
  region.api = Api::kNvtxRegion;
  region.nvtx_regions = 0;
  region.nvtx_region_bytes = 0;
  region.bytes = 4096;
  region.count = 2;
  region.pool_block = 0x7f0000200000;
  region.pool_api = Api::kCudaMalloc;
  region.heap = 0x1234;
  region.heap_name = "arena";
  region.region_name = "activations";
  d.leaks.push_back(region);
  ReportData::Leak outside = region;
  outside.pool_block = 0;
  outside.pool_api = Api::kUnknown;
  outside.heap = 0;
  outside.heap_name.clear();
  outside.region_name.clear();
  outside.count = 1;
  d.leaks.push_back(outside);
  ReportData::NvtxMem& m = d.nvtx_mem;
  m.used = true;
  m.heaps_registered = 2;
  m.heaps_unregistered = 1;
  m.heap_resets = 3;
  m.regions_registered = kHuge;
  m.regions_unregistered = 4;
  m.regions_resized = 5;
  m.regions_ended_by_heap = 6;
  m.regions_ended_by_free = 7;
  m.live_heaps = 1;
  m.live_regions = 3;
  m.live_region_bytes = kMax;
  m.problems = {{"unknown_heap", 2}, {"zero_size", 1}};
}

inline void AddSuppressions(ReportData& d) {
  d.suppressions.push_back({"leak:make_buffers", "/tmp/s.supp", 3, 1});
  d.suppressions.push_back({"oom:*", "/tmp/s.supp", 4, 0});
  d.summary.suppressed_errors = 2;
  d.summary.suppressed_leaks = 5;
  d.leaks[0].suppression = "leak:make_buffers";
}

inline void AddSignalCrash(ReportData& d) {
  ReportData::Crash& c = d.crash;
  c.present = true;
  c.kind = "signal";
  c.signal = 11;
  c.signal_name = "SIGSEGV";
  c.code = 2;
  c.code_name = "SEGV_ACCERR";
  c.fault_address = 0x7e0000001010;
  c.has_fault_address = true;
  c.thread = 31338;
  c.has_fault_block = true;
  c.fault_block.api = Api::kCudaMallocManaged;
  c.fault_block.kind = MemoryKind::kManaged;
  c.fault_block.address = 0x7e0000001000;
  c.fault_block.bytes = 4096;
  c.fault_block.device = 0;
  c.fault_block.thread = 1;
  c.fault_block.stack = kGrowthStack;  // named by id only
  c.fault_offset = 16;
  c.recent_kernels.push_back({"fill(float*)", 0x10, 0x5555, 1.000001});
  c.recent_kernels.push_back({"scale(float*, float)", 0, 0x5555, 2.5});
  c.launches_seen = kHuge;
  c.live.push_back(c.fault_block);
  AllocationRecord pinned;
  pinned.api = Api::kCudaMallocHost;
  pinned.kind = MemoryKind::kPinnedHost;
  pinned.address = 0x7d0000000000;
  pinned.bytes = kHuge;
  pinned.device = -1;
  pinned.thread = 2;
  pinned.stack = 999;  // an id without frames
  c.live.push_back(pinned);
  c.live_blocks = 5;
  c.live_bytes = kMax;
  c.health_status = "not read in a signal handler";
  c.skipped = {"symbols (the loader lock is held)", "guard check"};
}

inline void AddCudaErrorCrash(ReportData& d) {
  ReportData::Crash& c = d.crash;
  c.present = true;
  c.kind = "cuda-error";
  c.thread = 7;
  c.call = "cudaDeviceSynchronize";
  c.cuda_result = 700;
  c.cuda_result_name = "cudaErrorIllegalAddress";
  c.recent_kernels_note = "no kernel launch was seen";
  c.health_status = "ok";
}

// Every section at once.
inline ReportData Full() {
  ReportData d = Base();
  AddReachability(d);
  AddGrowth(d);
  AddOom(d);
  AddThreads(d);
  AddHealth(d);
  AddTimeline(d);
  AddNvtxRanges(d);
  AddNvtxMem(d);
  AddSuppressions(d);
  AddSignalCrash(d);
  d.crash.call = "cudaDeviceSynchronize";  // both a signal and a CUDA error
  d.crash.cuda_result = 700;
  d.crash.cuda_result_name = "cudaErrorIllegalAddress";
  d.errors_dropped = 3;
  return d;
}

}  // namespace gmt::sample

#endif  // GMT_TESTS_CLI_REPORT_PARSE_SAMPLE_H_
