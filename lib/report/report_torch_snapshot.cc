// The PyTorch memory snapshot (torch.cuda.memory._snapshot() /
// _dump_snapshot()), so users keep the viewer they know: `python -m
// torch.cuda._memory_viz trace_plot FILE -o out.html`, segment_plot, stats,
// trace, and the drag-and-drop page pytorch.org/memory_viz.
//
// Mapping: PyTorch's caching allocator carves blocks out of segments it got
// from cudaMalloc; we see the CUDA calls themselves, so every allocation is
// one segment holding one block of the same size:
//   alloc  -> device_traces: segment_alloc, alloc
//   free   -> device_traces: free_requested, free_completed, segment_free
//   live   -> segments: {..., blocks: [{state: active_allocated, ...}]}
// Frames are our symbolized host stacks (innermost first, as PyTorch's).
// Pinned host memory has no place in the format and is left out.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/report/pickle_writer.h"
#include "lib/report/report.h"

namespace gmt {
namespace {

class SnapshotWriter {
 public:
  explicit SnapshotWriter(const ReportData& data) : data_(data) {}

  std::string Write() {
    int devices = 0;
    for (const ReportData::Device& d : data_.devices) {
      devices = std::max(devices, d.index + 1);
    }
    for (const auto& b : data_.timeline.live) {
      devices = std::max(devices, b.device + 1);
    }
    for (const auto& e : data_.timeline.events) {
      devices = std::max(devices, e.device + 1);
    }
    devices = std::max(devices, 1);

    w_.BeginDict();
    w_.Key("segments");
    w_.BeginList();
    std::vector<const ReportData::Timeline::Block*> live;
    for (const auto& b : data_.timeline.live) {
      if (b.device >= 0) live.push_back(&b);
    }
    std::sort(live.begin(), live.end(), [](const auto* a, const auto* b) {
      return std::tie(a->device, a->address) < std::tie(b->device, b->address);
    });
    for (const auto* b : live) Segment(*b);
    w_.EndList();

    w_.Key("device_traces");
    w_.BeginList();
    for (int d = 0; d < devices; ++d) {
      w_.BeginList();
      for (const auto& e : data_.timeline.events) {
        if (e.device != d) continue;
        if (e.free) {
          TraceEntry("free_requested", e);
          TraceEntry("free_completed", e);
          TraceEntry("segment_free", e);
        } else {
          TraceEntry("segment_alloc", e);
          TraceEntry("alloc", e);
        }
      }
      w_.EndList();
    }
    w_.EndList();

    // What PyTorch's snapshot also carries; the viewers tolerate it empty.
    w_.Key("allocator_settings");
    w_.BeginDict();
    w_.EndDict();
    w_.Key("external_annotations");
    w_.BeginList();
    w_.EndList();
    w_.EndDict();
    return w_.Finish();
  }

 private:
  // The frames list of `stack`, written once and then referenced.
  void Frames(StackId stack) {
    auto memo = frames_memo_.find(stack);
    if (memo != frames_memo_.end()) {
      w_.Recall(memo->second);
      return;
    }
    w_.BeginList();
    auto it = data_.stacks.find(stack);
    if (it != data_.stacks.end()) {
      for (const SymbolizedFrame& f : it->second) {
        w_.BeginDict();
        w_.Key("filename");
        w_.String(f.file.empty() ? f.module : f.file);
        w_.Key("line");
        w_.Int(f.line);
        w_.Key("name");
        w_.String(f.function.empty() ? "??" : f.function);
        w_.EndDict();
      }
    }
    w_.EndList();
    frames_memo_[stack] = w_.Remember();
  }

  void Segment(const ReportData::Timeline::Block& b) {
    w_.BeginDict();
    w_.Key("device");
    w_.Int(b.device);
    w_.Key("address");
    w_.UInt(b.address);
    w_.Key("total_size");
    w_.UInt(b.bytes);
    w_.Key("allocated_size");
    w_.UInt(b.bytes);
    w_.Key("active_size");
    w_.UInt(b.bytes);
    w_.Key("requested_size");
    w_.UInt(b.bytes);
    w_.Key("stream");
    w_.UInt(b.stream);
    w_.Key("segment_type");
    // PyTorch's own split: blocks up to 1 MiB come from the small pool.
    w_.String(b.bytes <= (1u << 20) ? "small" : "large");
    w_.Key("segment_pool_id");
    w_.Int(0);
    w_.Int(0);
    w_.EndTuple2();
    w_.Key("is_expandable");
    w_.Bool(false);
    w_.Key("frames");
    Frames(b.stack);
    w_.Key("blocks");
    w_.BeginList();
    w_.BeginDict();
    w_.Key("address");
    w_.UInt(b.address);
    w_.Key("size");
    w_.UInt(b.bytes);
    w_.Key("requested_size");
    w_.UInt(b.bytes);
    w_.Key("state");
    w_.String("active_allocated");
    w_.Key("frames");
    Frames(b.stack);
    w_.EndDict();
    w_.EndList();
    w_.EndDict();
  }

  void TraceEntry(const char* action, const ReportData::Timeline::Event& e) {
    w_.BeginDict();
    w_.Key("action");
    w_.String(action);
    w_.Key("addr");
    w_.UInt(e.address);
    w_.Key("size");
    w_.UInt(e.bytes);
    w_.Key("stream");
    w_.UInt(e.stream);
    w_.Key("time_us");
    w_.Int(e.time_ns / 1000);
    w_.Key("frames");
    Frames(e.stack);
    w_.EndDict();
  }

  const ReportData& data_;
  PickleWriter w_;
  absl::flat_hash_map<StackId, uint32_t> frames_memo_;
};

}  // namespace

std::string RenderTorchSnapshot(const ReportData& data) {
  return SnapshotWriter(data).Write();
}

}  // namespace gmt
