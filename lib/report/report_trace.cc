// Chrome trace event JSON (the "JSON Object Format" of the Trace Event Format
// document), which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Per device one process (pid = device + 1; pinned host memory is pid 1000):
//   - a counter track "bytes in use" ("C" events) from the timeline series,
//     peaks kept;
//   - allocation lifetimes as async slices ("b"/"e", one id per block), named
//     after the call site, so Perfetto groups a call site's blocks in one
//     track; args carry bytes, api, address, stream, thread and the stack.
// Blocks still live at the report end at the report's last event and carry
// "live_at_report": true. Lifetimes whose allocation was dropped from the
// timeline are left out (the counter still shows their bytes).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/report/report.h"
#include "lib/report/report_viz_util.h"

namespace gmt {
namespace {

using nlohmann::json;

// Lifetimes written at most (the newest are kept): a trace viewer slows down
// past a few hundred thousand slices, and the file stays under ~100 MB.
constexpr size_t kMaxLifetimes = 250000;
constexpr int kHostPid = 1000;

int PidOf(int device) { return device < 0 ? kHostPid : device + 1; }
double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

struct Lifetime {
  const ReportData::Timeline::Event* alloc;
  int64_t end_ns;
  bool live;
};

class TraceWriter {
 public:
  explicit TraceWriter(const ReportData& data) : data_(data) {}

  std::string Write() {
    // Streamed one event at a time: a json tree of every event would cost
    // hundreds of bytes each.
    out_ = "{\"traceEvents\":[\n";
    Processes();
    Counters();
    Lifetimes();
    json other = {{"tool", "gpumemtrace"},
                  {"version", data_.version},
                  {"pid", data_.pid},
                  {"argv", data_.argv},
                  {"timeline_recorded", data_.timeline.recorded},
                  {"events_recorded", data_.timeline.recorded_events},
                  {"events_dropped", data_.timeline.dropped},
                  {"lifetimes_omitted", lifetimes_omitted_}};
    absl::StrAppend(&out_, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":",
                    Dump(other), "}\n");
    return std::move(out_);
  }

 private:
  static std::string Dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  void Emit(const json& event) {
    if (!first_event_) out_.append(",\n");
    first_event_ = false;
    out_.append(Dump(event));
  }

  std::vector<int> Devices() const {
    std::vector<int> devices;
    for (const ReportData::Device& d : data_.devices)
      devices.push_back(d.index);
    if (data_.host.allocations > 0) devices.push_back(-1);
    for (const auto& [device, points] : data_.timeline.series) {
      devices.push_back(device);
    }
    for (const auto& e : data_.timeline.events) devices.push_back(e.device);
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    return devices;
  }

  void Processes() {
    for (int device : Devices()) {
      std::string name =
          device < 0 ? "pinned host memory" : absl::StrCat("GPU ", device);
      for (const ReportData::Device& d : data_.devices) {
        if (d.index == device && !d.name.empty()) {
          absl::StrAppend(&name, " (", d.name, ")");
        }
      }
      Emit(json{{"ph", "M"},
                {"name", "process_name"},
                {"pid", PidOf(device)},
                {"tid", 0},
                {"args", {{"name", name}}}});
      Emit(json{{"ph", "M"},
                {"name", "process_sort_index"},
                {"pid", PidOf(device)},
                {"tid", 0},
                {"args", {{"sort_index", PidOf(device)}}}});
    }
  }

  void Counters() {
    for (const auto& [device, points] : data_.timeline.series) {
      for (const auto& p : points) {
        Emit(json{{"ph", "C"},
                  {"name", "bytes in use"},
                  {"pid", PidOf(device)},
                  {"tid", 0},
                  {"ts", Micros(p.time_ns)},
                  {"args", {{"bytes", p.live_bytes}}}});
      }
    }
  }

  const std::string& Label(const ReportData::Timeline::Event& e) {
    auto it = labels_.find(e.stack);
    if (it == labels_.end()) {
      it = labels_.emplace(e.stack, CallSiteLabel(e.stack, data_.stacks, e.api))
               .first;
    }
    return it->second;
  }

  json Stack(StackId id) const {
    json frames = json::array();
    auto it = data_.stacks.find(id);
    if (it == data_.stacks.end()) return frames;
    for (const SymbolizedFrame& f : it->second) frames.push_back(FrameText(f));
    return frames;
  }

  void Lifetimes() {
    const auto& all = data_.timeline.events;
    if (all.empty()) return;
    const int64_t end_ns = all.back().time_ns;
    std::vector<Lifetime> lifetimes;
    absl::flat_hash_map<std::pair<int, uint64_t>, size_t> open;
    for (const auto& e : all) {
      const std::pair<int, uint64_t> key{e.device, e.address};
      if (!e.free) {
        open[key] = lifetimes.size();
        lifetimes.push_back(Lifetime{&e, end_ns, true});
        continue;
      }
      auto it = open.find(key);
      if (it == open.end()) continue;  // its allocation was dropped
      lifetimes[it->second].end_ns = e.time_ns;
      lifetimes[it->second].live = false;
      open.erase(it);
    }
    size_t first = 0;
    if (lifetimes.size() > kMaxLifetimes) {
      first = lifetimes.size() - kMaxLifetimes;
      lifetimes_omitted_ = first;
    }
    absl::flat_hash_map<StackId, json> stacks;
    for (size_t i = first; i < lifetimes.size(); ++i) {
      const Lifetime& l = lifetimes[i];
      const auto& a = *l.alloc;
      const std::string& name = Label(a);
      const std::string cat(ApiName(a.api));
      const std::string id = absl::StrFormat("0x%x", i + 1);
      auto stack = stacks.find(a.stack);
      if (stack == stacks.end()) {
        stack = stacks.emplace(a.stack, Stack(a.stack)).first;
      }
      json args = {{"bytes", a.bytes},
                   {"api", cat},
                   {"address", absl::StrFormat("0x%x", a.address)},
                   {"stream", absl::StrFormat("0x%x", a.stream)},
                   {"thread", a.thread},
                   {"stack", stack->second}};
      if (l.live) args["live_at_report"] = true;
      Emit(json{{"ph", "b"},
                {"name", name},
                {"cat", cat},
                {"id", id},
                {"pid", PidOf(a.device)},
                {"tid", 0},
                {"ts", Micros(a.time_ns)},
                {"args", std::move(args)}});
      Emit(json{{"ph", "e"},
                {"name", name},
                {"cat", cat},
                {"id", id},
                {"pid", PidOf(a.device)},
                {"tid", 0},
                {"ts", Micros(l.end_ns)}});
    }
  }

  const ReportData& data_;
  absl::flat_hash_map<StackId, std::string> labels_;
  uint64_t lifetimes_omitted_ = 0;
  std::string out_;
  bool first_event_ = true;
};

}  // namespace

std::string RenderChromeTrace(const ReportData& data) {
  return TraceWriter(data).Write();
}

}  // namespace gmt
