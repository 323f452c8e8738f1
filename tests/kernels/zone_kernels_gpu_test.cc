// The guard-zone kernels and DriverDeviceOps on a real GPU: the scenarios of
// zone_scenarios.cc (the same ones device_ops_test runs against the CPU test
// double), then the scan rate of a check against the device's copy bandwidth.
//
// Exit status: 0 all passed, 1 a scenario failed, 77 no CUDA driver or device
// (CTest SKIP_RETURN_CODE). Links no CUDA library: libcuda.so.1 is opened at
// run time, as the tool does.
//
// Output, a line for each measurement (parsed by scripts):
//   scan_rate_gbps=<check GB/s> copy_gbps=<cuMemcpyDtoD GB/s> ratio=<scan/copy>
//   inline_check_us floor=<gpu>/<host> two_buffers=... small_zones=...
//     one_32mib=...
//   fill_us kernel=<gpu>/<host> memset=<gpu>/<host> write64=<gpu>/<host>
//     canaries_tool=<gpu>/<host> canaries_kernel=<gpu>/<host>
//   freed_fill_us memset_4k=<gpu>/<host> kernel_4k=... memset_256k=...
//     kernel_256k=... memset_1m=... kernel_1m=... memset_32m=... kernel_32m=...
//   launch_us table_fill=<gpu>/<host> inline_fill=... inline_fill_function=...
//     inline_check=... small_check=... inline_check_16b=...
//     small_check_16b=...
// The second: GPU and host microseconds per inline check
// (gmt_check_zones_inline) queued back to back on one stream, for the zones
// of: a 16-byte zone (the launch floor);
// two 256 MiB buffers, whole (two 512 B front zones and two 1 MiB tails: the
// check at a synchronization of the perf suite's kernel_loop; its per-kernel
// checks read 8 KiB of each); 12 small tensors (24 zones, 512 B fronts and
// tails of ~4 KiB from unaligned ends: a PyTorch kernel's per-kernel check);
// one 32 MiB freed tensor (tensor mode's quarantine).
// The third: what tensor mode writes before a kernel that follows an
// allocation and a free (a new 1000-byte tensor's 512-byte front and
// 536-byte tail, and a freed 4 KiB tensor's bytes), queued back to back the
// same way, GPU and host microseconds per fill: with the tool's fill kernel
// (one launch), with cuMemsetD8Async (one a zone), and the canaries alone as
// cuStreamBatchMemOp 64-bit writes (done by the GPU's front end, no kernel;
// the freed bytes still by one memset). Then a new tensor's two canaries
// alone: through DeviceOps::Fill, as the tool fills them (two memsets), and
// by one launch of the inline fill kernel (what the tool did before).
// Then a freed tensor's bytes alone (one zone) of 4 KiB, 256 KiB, 1 MiB and
// 32 MiB: one cuMemsetD8Async against one launch of the inline fill kernel,
// GPU and host microseconds per fill: the driver's memset costs the host more
// the larger it is, the kernel's launch does not.
// The fourth: GPU and host microseconds per launch of a guard kernel given
// no zones (it does nothing but start and end), by how it is launched: what
// any launch of the tool costs the program's stream and thread, apart from
// its work. table_fill: gmt_fill_zones (24 bytes of parameters); inline_fill:
// gmt_fill_zones_inline (1,040 bytes), as a CUkernel, as the tool launches
// it; inline_fill_function: the same through the context's CUfunction
// (cuKernelGetFunction); inline_check: gmt_check_zones_inline (1,048 bytes),
// whose block still writes its completion word to mapped host memory;
// small_check: gmt_check_zones_inline_small, the same; then both checks
// given one clean 16-byte zone (one load, the code of a clean scan).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/zone_kernels_image.h"
#include "lib/platform/driver_device_ops.h"
#include "tests/kernels/zone_scenarios.h"

namespace gmt_test {
namespace {

constexpr int kSkip = 77;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

// Checks ~1 GiB of zones (64 x 16 MiB) `kRounds` times through
// DeviceOps::Check and copies the same bytes with cuMemcpyDtoD as often.
// GB/s are bytes of zone (or bytes copied) per second, 1e9 bytes a GB.
bool MeasureScanRate(TestDriver& d, gmt::DeviceOps& ops) {
  constexpr uint64_t kZoneBytes = uint64_t{16} << 20;
  constexpr int kZones = 64;
  constexpr uint64_t kTotal = kZoneBytes * kZones;
  constexpr int kRounds = 10;
  if (d.memcpy_dtod == nullptr) {
    std::printf("scan rate: cuMemcpyDtoD_v2 missing\n");
    return false;
  }
  CUdeviceptr zones_block = 0, copy_to = 0;
  CUresult r = d.mem_alloc(&zones_block, kTotal);
  if (r == CUDA_SUCCESS) r = d.mem_alloc(&copy_to, kTotal);
  if (r != CUDA_SUCCESS) {
    std::printf("scan rate: cuMemAlloc of 2 x 1 GiB: %s\n", d.Name(r).c_str());
    if (zones_block != 0) d.mem_free(zones_block);
    return false;
  }
  std::vector<GmtZone> zones;
  for (int i = 0; i < kZones; ++i) {
    zones.push_back({zones_block + i * kZoneBytes, kZoneBytes, 0xa5, 0});
  }
  const uint64_t context = reinterpret_cast<uint64_t>(d.context);
  std::vector<GmtZoneResult> results;
  bool ok = ops.Fill(context, 0, zones) &&
            ops.Check(context, 0, zones, &results);  // warm-up
  double scan_seconds = 0, copy_seconds = 0;
  if (ok) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRounds && ok; ++i) {
      ok = ops.Check(context, 0, zones, &results);
    }
    scan_seconds = Seconds(start);
  }
  for (const GmtZoneResult& z : results) ok = ok && z.changed_bytes == 0;
  if (ok) {
    r = d.memcpy_dtod(copy_to, zones_block, kTotal);  // warm-up
    if (r == CUDA_SUCCESS) r = d.ctx_synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRounds && r == CUDA_SUCCESS; ++i) {
      r = d.memcpy_dtod(copy_to, zones_block, kTotal);
    }
    if (r == CUDA_SUCCESS) r = d.ctx_synchronize();
    copy_seconds = Seconds(start);
    ok = r == CUDA_SUCCESS;
  }
  d.mem_free(zones_block);
  d.mem_free(copy_to);
  if (!ok) {
    std::printf("scan rate: a fill, check or copy failed\n");
    return false;
  }
  const double scan_gbps = kTotal * double{kRounds} / scan_seconds / 1e9;
  const double copy_gbps = kTotal * double{kRounds} / copy_seconds / 1e9;
  std::printf("scan_rate_gbps=%.1f copy_gbps=%.1f ratio=%.2f\n", scan_gbps,
              copy_gbps, scan_gbps / copy_gbps);
  return true;
}

// A stream held back until the host lets it go (cuStreamWaitValue32 on a
// mapped word), with events around what is queued behind the hold: they time
// the GPU's work and not the host's enqueueing. Work queued while it is held
// must fit in the stream's queue (an enqueue into a full queue would wait for
// the held stream).
class HeldStream {
 public:
  // Whether the driver has what timing needs (the test double has not).
  static bool Available(const TestDriver& d) {
    return d.event_create != nullptr && d.event_record != nullptr &&
           d.event_elapsed_time != nullptr && d.event_destroy != nullptr &&
           d.stream_wait_value32 != nullptr &&
           d.mem_host_get_device_pointer != nullptr;
  }

  explicit HeldStream(TestDriver& d) : d_(d) {
    r_ = d.stream_create(&stream_, CU_STREAM_NON_BLOCKING);
    if (r_ == CUDA_SUCCESS) r_ = d.event_create(&start_, CU_EVENT_DEFAULT);
    if (r_ == CUDA_SUCCESS) r_ = d.event_create(&end_, CU_EVENT_DEFAULT);
    if (r_ == CUDA_SUCCESS) {
      r_ = d.mem_host_alloc(&gate_host_, 4, CU_MEMHOSTALLOC_DEVICEMAP);
    }
    if (r_ == CUDA_SUCCESS) {
      r_ = d.mem_host_get_device_pointer(&gate_, gate_host_, 0);
    }
  }
  ~HeldStream() {
    Let();  // never leave it held
    if (stream_ != nullptr) {
      d_.stream_synchronize(stream_);
      d_.stream_destroy(stream_);
    }
    if (start_ != nullptr) d_.event_destroy(start_);
    if (end_ != nullptr) d_.event_destroy(end_);
    if (gate_host_ != nullptr) d_.mem_free_host(gate_host_);
  }
  HeldStream(const HeldStream&) = delete;
  HeldStream& operator=(const HeldStream&) = delete;

  bool ok() const { return r_ == CUDA_SUCCESS; }
  CUresult result() const { return r_; }

  // `n` calls of `enqueue` queued behind the hold, in three rounds, each
  // round let go and then `after_round` run (null: nothing); appends
  // " name=<gpu>/<host>", the best round's GPU and host microseconds per
  // call, to *line. False when a call, `after_round` or the timing failed.
  bool TimePerCall(const char* name, int n,
                   const std::function<bool()>& enqueue, std::string* line,
                   const std::function<bool()>& after_round = nullptr) {
    float best_ms = 0;
    double best_host_us = 0;
    bool ok = true;
    for (int round = 0; round < 3 && ok; ++round) {
      ok = Hold();
      const auto host_start = std::chrono::steady_clock::now();
      for (int i = 0; i < n && ok; ++i) ok = enqueue();
      const double host_us = Seconds(host_start) * 1e6 / n;
      float ms = 0;
      ok = Let(&ms) && ok;
      if (ok && after_round) ok = after_round();
      if (ok && (round == 0 || ms < best_ms)) best_ms = ms;
      if (ok && (round == 0 || host_us < best_host_us)) best_host_us = host_us;
    }
    char field[96];
    std::snprintf(field, sizeof(field), " %s=%.2f/%.2f", name,
                  best_ms * 1000.0 / n, best_host_us);
    *line += field;
    return ok;
  }
  CUstream stream() const { return stream_; }

  // Holds the stream and records the start behind the hold.
  bool Hold() {
    *static_cast<volatile uint32_t*>(gate_host_) = 0;
    return d_.stream_wait_value32(stream_, gate_, 1,
                                  CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS &&
           d_.event_record(start_, stream_) == CUDA_SUCCESS;
  }
  // Records the end, lets the stream go, waits for it; `*ms`: the GPU's time
  // from the start to the end.
  bool Let(float* ms) {
    bool ok = d_.event_record(end_, stream_) == CUDA_SUCCESS;
    Let();
    ok = d_.stream_synchronize(stream_) == CUDA_SUCCESS && ok;
    return ok && d_.event_elapsed_time(ms, start_, end_) == CUDA_SUCCESS;
  }

 private:
  void Let() {
    if (gate_host_ != nullptr) *static_cast<volatile uint32_t*>(gate_host_) = 1;
  }

  TestDriver& d_;
  CUresult r_ = CUDA_SUCCESS;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr;
  CUevent end_ = nullptr;
  void* gate_host_ = nullptr;
  CUdeviceptr gate_ = 0;
};

// The inline fill kernel, from the guard kernels' image loaded as a
// library of its own (left loaded: the test process ends soon).
CUresult LoadInlineFill(TestDriver& d, CUkernel* kernel) {
  CUlibrary library = nullptr;
  const CUresult r =
      d.library_load_data(&library, gmt_zone_kernels_fatbin, nullptr, nullptr,
                          0, nullptr, nullptr, 0);
  if (r != CUDA_SUCCESS) return r;
  return d.library_get_kernel(kernel, library, GMT_INLINE_FILL_KERNEL_NAME);
}

// Frees a measurement's `block` once the device is done with it, then
// prints its `line`, or `failure` and the driver's answer `r`. Returns `ok`.
bool EndMeasurement(TestDriver& d, CUdeviceptr block, bool ok,
                    const char* failure, CUresult r, const std::string& line) {
  if (block != 0) {
    d.ctx_synchronize();
    d.mem_free(block);
  }
  if (!ok) {
    std::printf("%s (%s)\n", failure, d.Name(r).c_str());
    return false;
  }
  std::printf("%s\n", line.c_str());
  return true;
}

// GPU time per inline check for the shapes above, queued back to back behind
// a held stream.
bool MeasureInlineChecks(TestDriver& d, gmt::DeviceOps& ops) {
  if (!HeldStream::Available(d)) {
    std::printf("inline checks: not timed (no events or stream waits)\n");
    return true;
  }
  constexpr uint64_t kBlockBytes = uint64_t{64} << 20;
  CUdeviceptr block = 0;
  CUresult r = d.mem_alloc(&block, kBlockBytes);
  HeldStream held(d);
  if (r == CUDA_SUCCESS) r = held.result();
  const uint64_t context = reinterpret_cast<uint64_t>(d.context);
  const uint64_t s = reinterpret_cast<uint64_t>(held.stream());
  struct Shape {
    const char* name;
    std::vector<GmtZone> zones;
  };
  std::vector<Shape> shapes(4);
  shapes[0] = {"floor", {{block, 16, 0xa5, 0}}};
  shapes[1].name = "two_buffers";
  for (uint64_t i = 0; i < 2; ++i) {
    const uint64_t base = block + i * (uint64_t{4} << 20);
    shapes[1].zones.push_back({base, 512, 0xa5, 0});
    shapes[1].zones.push_back({base + 4096, uint64_t{1} << 20, 0xa5, 0});
  }
  shapes[2].name = "small_zones";
  for (uint64_t i = 0; i < 12; ++i) {
    const uint64_t base = block + (uint64_t{8} << 20) + i * 65536;
    shapes[2].zones.push_back({base, 512, 0xa5, 0});
    shapes[2].zones.push_back({base + 512 + 1000 + i * 7, 4096 + 88, 0xa5, 0});
  }
  shapes[3] = {"one_32mib",
               {{block + (uint64_t{16} << 20), uint64_t{32} << 20, 0xa5, 0}}};
  std::string line = "inline_check_us";
  bool ok = r == CUDA_SUCCESS;
  for (const Shape& shape : shapes) {
    if (!ok) break;
    uint64_t bytes = 0;
    for (const GmtZone& z : shape.zones) bytes += z.bytes;
    const uint64_t blocks =
        (bytes + GMT_INLINE_MAX_BYTES - 1) / GMT_INLINE_MAX_BYTES;
    // All of them in flight at once: within the completions the report has.
    const int checks = static_cast<int>(
        std::min<uint64_t>(200, GMT_REPORT_DONE_SLOTS / 2 / blocks));
    ok = ops.Fill(context, s, shape.zones) && d.ctx_synchronize() == 0;
    // One check answered before the stream is held: whatever the first
    // check of a context sets up (its report in pinned memory) is done
    // where no held stream could wait on it.
    if (ok) {
      std::vector<GmtZoneResult> warm;
      const uint64_t t = ops.CheckAfterKernel(context, s, shape.zones, true);
      ok = t != 0 &&
           ops.PollCheck(t, true, &warm) == gmt::DeviceOps::Poll::kDone;
    }
    // Each round's checks answered clean.
    std::vector<uint64_t> tickets;
    tickets.reserve(checks);
    const auto enqueue = [&] {
      tickets.push_back(ops.CheckAfterKernel(context, s, shape.zones, true));
      return tickets.back() != 0;
    };
    const auto answered = [&] {
      bool clean = true;
      std::vector<GmtZoneResult> results;
      for (uint64_t t : tickets) {
        clean = clean &&
                ops.PollCheck(t, true, &results) == gmt::DeviceOps::Poll::kDone;
        for (const GmtZoneResult& z : results) {
          clean = clean && z.changed_bytes == 0;
        }
      }
      tickets.clear();
      return clean;
    };
    ok = ok && held.TimePerCall(shape.name, checks, enqueue, &line, answered);
  }
  return EndMeasurement(
      d, block, ok, "inline checks: a fill, check or timing failed", r, line);
}

// GPU and host time per fill of tensor mode's shape (see the top), three
// ways, queued back to back behind a held stream.
bool MeasureLaunches(TestDriver& d) {
  if (!HeldStream::Available(d) || d.kernel_get_function == nullptr) {
    std::printf(
        "launches: not timed (no events, stream waits or "
        "cuKernelGetFunction)\n");
    return true;
  }
  constexpr int kLaunches = 100;
  CUlibrary library = nullptr;
  CUkernel table_fill = nullptr, inline_fill = nullptr, inline_check = nullptr,
           small_check = nullptr;
  CUfunction inline_fill_function = nullptr;
  void* report = nullptr;
  CUdeviceptr report_device = 0;
  CUresult r = d.library_load_data(&library, gmt_zone_kernels_fatbin, nullptr,
                                   nullptr, 0, nullptr, nullptr, 0);
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&table_fill, library, GMT_FILL_KERNEL_NAME);
  }
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&inline_fill, library,
                             GMT_INLINE_FILL_KERNEL_NAME);
  }
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&inline_check, library,
                             GMT_INLINE_CHECK_KERNEL_NAME);
  }
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&small_check, library,
                             GMT_INLINE_SMALL_CHECK_KERNEL_NAME);
  }
  if (r == CUDA_SUCCESS) {
    r = d.kernel_get_function(&inline_fill_function, inline_fill);
  }
  CUdeviceptr zone = 0;
  if (r == CUDA_SUCCESS) r = d.mem_alloc(&zone, 4096);
  if (r == CUDA_SUCCESS) r = d.memset_d8(zone, 0xa5, 4096);
  if (r == CUDA_SUCCESS) {
    r = d.mem_host_alloc(&report, sizeof(GmtCheckReport),
                         CU_MEMHOSTALLOC_DEVICEMAP);
  }
  if (r == CUDA_SUCCESS) {
    std::memset(report, 0, sizeof(GmtCheckReport));
    r = d.mem_host_get_device_pointer(&report_device, report, 0);
  }
  HeldStream held(d);
  if (r == CUDA_SUCCESS) r = held.result();
  CUstream stream = held.stream();
  // Arguments with no zones: each kernel returns at once (the check after
  // writing its completion word).
  CUdeviceptr no_table = 0;
  uint64_t zero = 0;
  void* table_params[] = {&no_table, &zero, &zero};
  GmtInlineFill fill{};
  void* fill_params[] = {&fill};
  GmtInlineCheck check{};
  check.report = report_device;
  void* check_params[] = {&check};
  GmtInlineCheck check_16b{};
  check_16b.report = report_device;
  check_16b.zones[0] = GmtZone{zone, 16, 0xa5, 0};
  check_16b.zone_count = 1;
  void* check_16b_params[] = {&check_16b};
  uint64_t next_id = 1;
  const auto launch = [&](int how) {
    switch (how) {
      case 0:
        return d.launch_kernel(reinterpret_cast<CUfunction>(table_fill), 1, 1,
                               1, 256, 1, 1, 0, stream, table_params, nullptr);
      case 1:
        return d.launch_kernel(reinterpret_cast<CUfunction>(inline_fill), 1, 1,
                               1, 256, 1, 1, 0, stream, fill_params, nullptr);
      case 2:
        return d.launch_kernel(inline_fill_function, 1, 1, 1, 256, 1, 1, 0,
                               stream, fill_params, nullptr);
      default: {
        // 3, 4: empty; 5, 6: one zone; odd: the large kernel.
        GmtInlineCheck& c = how >= 5 ? check_16b : check;
        c.check_id = next_id++;
        return d.launch_kernel(
            reinterpret_cast<CUfunction>(how % 2 == 1 ? inline_check
                                                      : small_check),
            1, 1, 1, GMT_INLINE_CHECK_THREADS, 1, 1, 0, stream,
            how >= 5 ? check_16b_params : check_params, nullptr);
      }
    }
  };
  std::string line = "launch_us";
  bool ok = r == CUDA_SUCCESS;
  const char* const names[] = {
      "table_fill",  "inline_fill",      "inline_fill_function", "inline_check",
      "small_check", "inline_check_16b", "small_check_16b"};
  for (int how = 0; how < 7 && ok; ++how) {
    ok = launch(how) == CUDA_SUCCESS &&
         d.stream_synchronize(stream) == CUDA_SUCCESS;  // warm
    ok = ok && held.TimePerCall(
                   names[how], kLaunches,
                   [&] { return launch(how) == CUDA_SUCCESS; }, &line);
  }
  if (ok) {
    // Every check answered clean, in its slot.
    const auto* answers = static_cast<const GmtCheckReport*>(report);
    const uint64_t last = next_id - 1;
    ok = answers->done[last % GMT_REPORT_DONE_SLOTS].word ==
         last << GMT_DONE_FINDINGS_BITS;
    if (!ok) std::printf("launches: the last empty check did not answer\n");
  }
  d.ctx_synchronize();
  if (report != nullptr) d.mem_free_host(report);
  if (zone != 0) d.mem_free(zone);
  if (!ok) {
    std::printf("launches: a launch or timing failed (%s)\n",
                d.Name(r).c_str());
    return false;
  }
  std::printf("%s\n", line.c_str());
  return true;
}

bool MeasureFills(TestDriver& d, gmt::DeviceOps& ops) {
  if (!HeldStream::Available(d) || d.memset_d8_async == nullptr) {
    std::printf("fills: not timed (no events, stream waits or memsets)\n");
    return true;
  }
  // Few enough that every operation fits in the held stream's queue.
  constexpr int kFills = 50;
  CUdeviceptr block = 0;
  CUresult r = d.mem_alloc(&block, 1 << 20);
  HeldStream held(d);
  if (r == CUDA_SUCCESS) r = held.result();
  const uint64_t context = reinterpret_cast<uint64_t>(d.context);
  CUstream stream = held.stream();
  const uint64_t s = reinterpret_cast<uint64_t>(stream);
  // A new 1000-byte tensor at `block` (front, tail) and a freed 4 KiB one.
  const std::vector<GmtZone> zones = {{block, 512, 0xcb, 0},
                                      {block + 512 + 1000, 536, 0xcb, 0},
                                      {block + 65536, 4096, 0xfd, 0}};
  std::vector<CUstreamBatchMemOpParams> writes;
  for (int z = 0; z < 2; ++z) {
    for (uint64_t off = 0; off + 8 <= zones[z].bytes; off += 8) {
      CUstreamBatchMemOpParams p{};
      p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
      p.writeValue.address = zones[z].address + off;
      p.writeValue.value64 = 0xcbcbcbcbcbcbcbcbull;
      writes.push_back(p);
    }
  }
  const auto fill = [&](int how) {
    switch (how) {
      case 0:
        return ops.Fill(context, s, zones);
      case 1:
        for (const GmtZone& z : zones) {
          if (d.memset_d8_async(z.address, z.pattern, z.bytes, stream) !=
              CUDA_SUCCESS) {
            return false;
          }
        }
        return true;
      default:
        // The driver takes at most 256 operations a batch.
        for (size_t i = 0; i < writes.size(); i += 256) {
          const auto n =
              static_cast<unsigned>(std::min<size_t>(256, writes.size() - i));
          if (d.stream_batch_mem_op(stream, n, writes.data() + i, 0) !=
              CUDA_SUCCESS) {
            return false;
          }
        }
        return d.memset_d8_async(zones[2].address, zones[2].pattern,
                                 zones[2].bytes, stream) == CUDA_SUCCESS;
    }
  };
  // A new tensor's canaries alone, and the inline fill kernel that writes
  // them in one launch.
  const std::vector<GmtZone> canaries(zones.begin(), zones.begin() + 2);
  CUkernel inline_fill = nullptr;
  if (r == CUDA_SUCCESS) r = LoadInlineFill(d, &inline_fill);
  GmtInlineFill canary_fill{};
  uint64_t canary_chunks = 0;
  for (const GmtZone& z : canaries) {
    GmtZone& to = canary_fill.zones[canary_fill.zone_count++];
    to = z;
    to.chunk_begin = canary_chunks;
    canary_chunks +=
        (z.bytes + GMT_ZONE_CHUNK_BYTES - 1) / GMT_ZONE_CHUNK_BYTES;
  }
  canary_fill.total_chunks = canary_chunks;
  void* canary_params[] = {&canary_fill};
  std::string line = "fill_us";
  bool ok = r == CUDA_SUCCESS;
  const auto timed = [&](int how) {
    switch (how) {
      case 3:
        return ops.Fill(context, s, canaries);
      case 4:
        return d.launch_kernel(reinterpret_cast<CUfunction>(inline_fill),
                               static_cast<unsigned>(canary_chunks), 1, 1, 256,
                               1, 1, 0, stream, canary_params,
                               nullptr) == CUDA_SUCCESS;
      default:
        return fill(how);
    }
  };
  const char* const names[] = {"kernel", "memset", "write64", "canaries_tool",
                               "canaries_kernel"};
  for (int how = 0; how < 5 && ok; ++how) {
    if (how == 2 && d.stream_batch_mem_op == nullptr) {
      line += " write64=n/a";
      continue;
    }
    ok = timed(how) && d.stream_synchronize(stream) == CUDA_SUCCESS;  // warm
    ok = ok && held.TimePerCall(
                   names[how], kFills, [&] { return timed(how); }, &line);
  }
  if (ok) {
    // Both ways wrote the canaries.
    std::vector<unsigned char> front(512);
    ok = d.memcpy_dtoh(front.data(), block, front.size()) == CUDA_SUCCESS &&
         std::all_of(front.begin(), front.end(),
                     [](unsigned char c) { return c == 0xcb; });
    if (!ok) std::printf("fills: the canaries were not written\n");
  }
  return EndMeasurement(d, block, ok, "fills: a fill or timing failed", r,
                        line);
}

bool MeasureFreedFills(TestDriver& d) {
  if (!HeldStream::Available(d) || d.memset_d8_async == nullptr) {
    std::printf(
        "freed fills: not timed (no events, stream waits or memsets)\n");
    return true;
  }
  constexpr int kFills = 20;
  constexpr uint64_t kMost = uint64_t{32} << 20;
  CUdeviceptr block = 0;
  CUresult r = d.mem_alloc(&block, kMost);
  HeldStream held(d);
  if (r == CUDA_SUCCESS) r = held.result();
  CUkernel inline_fill = nullptr;
  if (r == CUDA_SUCCESS) r = LoadInlineFill(d, &inline_fill);
  CUstream stream = held.stream();
  std::string line = "freed_fill_us";
  bool ok = r == CUDA_SUCCESS;
  const struct {
    const char* name;
    uint64_t bytes;
  } sizes[] = {
      {"4k", 4096}, {"256k", 256 << 10}, {"1m", 1 << 20}, {"32m", kMost}};
  for (const auto& size : sizes) {
    if (!ok) break;
    GmtInlineFill fill{};
    fill.zones[0] = GmtZone{block, size.bytes, 0xfd, 0};
    fill.zone_count = 1;
    fill.total_chunks =
        (size.bytes + GMT_ZONE_CHUNK_BYTES - 1) / GMT_ZONE_CHUNK_BYTES;
    void* params[] = {&fill};
    const auto memset = [&] {
      return d.memset_d8_async(block, 0xfd, size.bytes, stream) == CUDA_SUCCESS;
    };
    const auto kernel = [&] {
      return d.launch_kernel(reinterpret_cast<CUfunction>(inline_fill),
                             static_cast<unsigned>(fill.total_chunks), 1, 1,
                             256, 1, 1, 0, stream, params,
                             nullptr) == CUDA_SUCCESS;
    };
    const std::string m = std::string("memset_") + size.name;
    const std::string k = std::string("kernel_") + size.name;
    ok = memset() && kernel() && d.stream_synchronize(stream) == CUDA_SUCCESS;
    ok = ok && held.TimePerCall(m.c_str(), kFills, memset, &line);
    ok = ok && held.TimePerCall(k.c_str(), kFills, kernel, &line);
  }
  if (ok) {
    // The kernel wrote the whole of the last size.
    unsigned char last = 0;
    ok = d.memcpy_dtoh(&last, block + kMost - 1, 1) == CUDA_SUCCESS &&
         last == 0xfd;
    if (!ok) std::printf("freed fills: the last byte was not written\n");
  }
  return EndMeasurement(d, block, ok, "freed fills: a fill or timing failed", r,
                        line);
}

int Main() {
  static TestDriver driver;
  std::string why;
  if (!driver.Open(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return kSkip;
  }
  char name[256] = "";
  driver.device_get_name(name, sizeof(name), 0);
  std::printf("device 0: %s\n", name);
  static gmt::DriverDeviceOps ops;
  int failed = 0;
  for (const Scenario& scenario : ZoneScenarios()) {
    std::vector<std::string> failures;
    {
      ScenarioContext sc(driver, ops);
      scenario.run(sc);
      failures = sc.failures();
    }
    std::printf("%s %s\n", failures.empty() ? "PASS" : "FAIL", scenario.name);
    for (const std::string& f : failures) std::printf("  %s\n", f.c_str());
    if (!failures.empty()) ++failed;
  }
  std::printf("%d of %zu scenarios failed\n", failed, ZoneScenarios().size());
  const bool measured = MeasureScanRate(driver, ops);
  const bool timed = MeasureInlineChecks(driver, ops);
  const bool fills = MeasureFills(driver, ops);
  const bool freed_fills = MeasureFreedFills(driver);
  const bool launches = MeasureLaunches(driver);
  std::fflush(stdout);
  return failed == 0 && measured && timed && fills && freed_fills && launches
             ? 0
             : 1;
}

}  // namespace
}  // namespace gmt_test

int main() { return gmt_test::Main(); }
