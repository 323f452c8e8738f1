// Made-up ReportData for the viz writers (report_viz_test.cc, and
// viz_sample_main.cc, which writes the files the Python and Chromium checks
// read): two GPUs and pinned host memory, a timeline with a lifetime that
// ends, two that are live at the report, hostile text in argv and symbols.
#ifndef GMT_TESTS_UNIT_VIZ_SAMPLE_DATA_H_
#define GMT_TESTS_UNIT_VIZ_SAMPLE_DATA_H_

#include <cstdint>

#include "lib/report/report.h"

namespace gmt {

inline constexpr StackId kVizTrainStack = 7;
inline constexpr StackId kVizLeakStack = 8;
inline constexpr StackId kVizHostStack = 9;
inline constexpr uint64_t kVizMiB = 1024 * 1024;

// Device 0: a 4 MiB block 0x7f0000000000 from 1 ms to 3 ms (train_step),
//   a 1 MiB block 0x7f0000400000 from 2 ms, never freed (leak_here).
// Device 1: a 2 MiB block 0x7e0000000000 from 4 ms, never freed (train_step),
//   on stream 0x55.
// Pinned host: 4 KiB 0x10000 from 5 ms to 6 ms.
inline ReportData MakeVizSample() {
  ReportData d;
  d.version = "9.9.9";
  d.pid = 4321;
  d.argv = {"./train", "--name=<script>alert(1)</script>"};
  d.reason = "exit";
  d.devices = {
      ReportData::Device{0, "NVIDIA H200", 140ull << 30, 5 * kVizMiB,
                         1 * kVizMiB, 2, 1},
      ReportData::Device{1, "NVIDIA H200", 140ull << 30, 2 * kVizMiB,
                         2 * kVizMiB, 1, 0},
  };
  d.host = ReportData::Device{-1, "pinned host memory", 0, 4096, 0, 1, 1};
  d.summary.allocations = 4;
  d.summary.frees = 2;
  d.summary.live_bytes_at_exit = 3 * kVizMiB;
  d.summary.leaks = 2;
  d.summary.leaked_bytes = 3 * kVizMiB;
  d.summary.errors = 1;

  d.stacks[kVizTrainStack] = {
      SymbolizedFrame{0x401000, "train_step(float*, int)", "/src/train.cu", 42,
                      "train"},
      SymbolizedFrame{0x402000, "main", "/src/train.cu", 99, "train"}};
  d.stacks[kVizLeakStack] = {
      SymbolizedFrame{0x403000, "leak_here<Tag&lt;&>", "/src/a<b>.cu", 7,
                      "train"},
      SymbolizedFrame{0x402000, "main", "/src/train.cu", 100, "train"}};
  // No symbols: only the address and module.
  d.stacks[kVizHostStack] = {
      SymbolizedFrame{0x404000, "", "", 0, "libbad\xff\xfename.so"}};

  ReportData::Leak leak;
  leak.api = Api::kCudaMalloc;
  leak.kind = MemoryKind::kDevice;
  leak.device = 0;
  leak.stack = kVizLeakStack;
  leak.bytes = kVizMiB;
  leak.count = 1;
  leak.address = 0x7f0000400000;
  d.leaks.push_back(leak);
  leak.device = 1;
  leak.stack = kVizTrainStack;
  leak.bytes = 2 * kVizMiB;
  leak.address = 0x7e0000000000;
  d.leaks.push_back(leak);

  ErrorRecord e;
  e.kind = ErrorKind::kDoubleFree;
  e.api = Api::kCudaFree;
  e.address = 0x7f0000000000;
  e.stack = kVizTrainStack;
  e.detail = "cudaFree of 0x7f0000000000, freed before <twice>";
  d.errors.push_back(e);

  auto& t = d.timeline;
  t.recorded = true;
  t.capacity = 1024;
  t.recorded_events = 6;
  using Event = ReportData::Timeline::Event;
  auto ev = [](int64_t ms, uint64_t address, uint64_t bytes, uint64_t live,
               StackId stack, int device, Api api, bool free,
               uint64_t stream = 0) {
    Event e;
    e.time_ns = ms * 1000000;
    e.address = address;
    e.bytes = bytes;
    e.live_bytes = live;
    e.stack = stack;
    e.device = device;
    e.api = api;
    e.free = free;
    e.stream = stream;
    e.thread = 1;
    return e;
  };
  t.events = {
      ev(1, 0x7f0000000000, 4 * kVizMiB, 4 * kVizMiB, kVizTrainStack, 0,
         Api::kCudaMalloc, false),
      ev(2, 0x7f0000400000, kVizMiB, 5 * kVizMiB, kVizLeakStack, 0,
         Api::kCudaMalloc, false),
      ev(3, 0x7f0000000000, 4 * kVizMiB, kVizMiB, kVizTrainStack, 0,
         Api::kCudaMalloc, true),
      ev(4, 0x7e0000000000, 2 * kVizMiB, 2 * kVizMiB, kVizTrainStack, 1,
         Api::kCudaMallocAsync, false, 0x55),
      ev(5, 0x10000, 4096, 4096, kVizHostStack, -1, Api::kCudaMallocHost,
         false),
      ev(6, 0x10000, 4096, 0, kVizHostStack, -1, Api::kCudaMallocHost, true),
  };
  using Point = ReportData::Timeline::Point;
  t.series[0] = {Point{1000000, 4 * kVizMiB}, Point{2000000, 5 * kVizMiB},
                 Point{3000000, kVizMiB}};
  t.series[1] = {Point{4000000, 2 * kVizMiB}};
  t.series[-1] = {Point{5000000, 4096}, Point{6000000, 0}};
  ReportData::Timeline::Block b;
  b.address = 0x7f0000400000;
  b.bytes = kVizMiB;
  b.time_ns = 2000000;
  b.stack = kVizLeakStack;
  b.device = 0;
  b.api = Api::kCudaMalloc;
  t.live.push_back(b);
  b.address = 0x7e0000000000;
  b.bytes = 2 * kVizMiB;
  b.time_ns = 4000000;
  b.stack = kVizTrainStack;
  b.device = 1;
  b.stream = 0x55;
  b.api = Api::kCudaMallocAsync;
  t.live.push_back(b);
  return d;
}

}  // namespace gmt

#endif  // GMT_TESTS_UNIT_VIZ_SAMPLE_DATA_H_
