// Snapshot diffs: matching, grouping, text and JSON (see snapshot_diff.h).
#include "lib/report/snapshot_diff.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "lib/report/report.h"
#include "lib/report/text_out.h"

namespace gmt {
namespace {

using nlohmann::json;

// ---- Matching and grouping
// ---------------------------------------------------

// Identity of one block across snapshots (see the header).
using BlockKey = std::tuple<uintptr_t, int, uint32_t, double>;

BlockKey KeyOf(const Allocation& a) {
  return {a.address, a.device, a.thread, a.time_s};
}

// The call site of a block, as a string: api, device, then each frame.
std::string SiteOf(const Allocation& a) {
  std::string key = absl::StrCat(a.api, "|", a.device);
  for (const Frame& f : a.stack) {
    if (f.function.empty() && f.file.empty()) {
      absl::StrAppend(&key, "|?", f.module, "+", f.address);
    } else {
      absl::StrAppend(&key, "|", f.function, "@", f.file, ":", f.line);
    }
  }
  return key;
}

// Collects blocks into call-site groups in order of first appearance.
class Grouper {
 public:
  void Add(const Allocation& a) {
    auto [it, inserted] = index_.try_emplace(SiteOf(a), groups_.size());
    if (inserted) {
      DiffGroup g;
      g.api = a.api;
      g.kind = a.kind;
      g.device = a.device;
      g.stack = a.stack;
      groups_.push_back(std::move(g));
    }
    DiffGroup& g = groups_[it->second];
    ++g.count;
    g.bytes += a.bytes;
  }

  // Largest bytes first, then most blocks; ties keep first appearance.
  std::vector<DiffGroup> Take() {
    std::stable_sort(groups_.begin(), groups_.end(),
                     [](const DiffGroup& a, const DiffGroup& b) {
                       if (a.bytes != b.bytes) return a.bytes > b.bytes;
                       return a.count > b.count;
                     });
    return std::move(groups_);
  }

 private:
  absl::flat_hash_map<std::string, size_t> index_;
  std::vector<DiffGroup> groups_;
};

// Devices >= 0 ascending, then host (-1), as in Snapshot::devices.
bool DeviceOrder(int a, int b) {
  if ((a < 0) != (b < 0)) return a >= 0;
  return a < b;
}

// ---- Text
// --------------------------------------------------------------------

std::string SignedBytes(int64_t bytes) {
  if (bytes == 0) return "0 B";
  uint64_t magnitude = bytes < 0 ? 0 - static_cast<uint64_t>(bytes)
                                 : static_cast<uint64_t>(bytes);
  return absl::StrCat(bytes < 0 ? "-" : "+", HumanBytes(magnitude));
}

std::string Plural(uint64_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

void PrintStack(TextOut& out, const std::vector<Frame>& stack) {
  if (stack.empty()) {
    out.Line("    (no stack: stack_depth=0 or capture failed)");
    return;
  }
  int i = 0;
  for (const Frame& f : stack) {
    std::string loc;
    if (!f.file.empty()) loc = absl::StrCat(" ", f.file, ":", f.line);
    out.Line("    #%d 0x%x in %s%s (%s)", i++, f.address,
             f.function.empty() ? "??" : f.function, loc,
             f.module.empty() ? "?" : f.module);
  }
}

void PrintGroups(TextOut& out, absl::string_view label,
                 const std::vector<DiffGroup>& groups) {
  for (const DiffGroup& g : groups) {
    out.Line("%s: %s in %s from %s (%s) on %s, allocated here:", label,
             HumanBytes(g.bytes), Plural(g.count, "block", "blocks"),
             g.api.empty() ? "?" : g.api, g.kind.empty() ? "?" : g.kind,
             DeviceLabel(g.device));
    PrintStack(out, g.stack);
  }
}

// ---- JSON
// --------------------------------------------------------------------

json FrameToJson(const Frame& f) {
  json frame = {{"address", absl::StrFormat("0x%x", f.address)},
                {"function", f.function},
                {"module", f.module}};
  if (!f.file.empty()) {
    frame["file"] = f.file;
    frame["line"] = f.line;
  }
  return frame;
}

json StackToJson(const std::vector<Frame>& stack) {
  json out = json::array();
  for (const Frame& f : stack) out.push_back(FrameToJson(f));
  return out;
}

json GroupsToJson(const std::vector<DiffGroup>& groups) {
  json out = json::array();
  for (const DiffGroup& g : groups) {
    out.push_back({{"api", g.api},
                   {"kind", g.kind},
                   {"device", g.device},
                   {"count", g.count},
                   {"bytes", g.bytes},
                   {"stack", StackToJson(g.stack)}});
  }
  return out;
}

std::string Dump(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ErrorDocument(const std::string& problem) {
  return Dump(json{{"error", problem}});
}

// Reads typed fields of one JSON object, naming the first problem by its path
// ("allocations[2].bytes"). After a failure every call is a no-op returning
// false, so callers check ok() once at the end of a block.
class Reader {
 public:
  explicit Reader(std::string* error) : error_(error) {}

  bool ok() const { return ok_; }

  bool Fail(const std::string& path, absl::string_view problem) {
    if (ok_) *error_ = absl::StrCat(path, ": ", problem);
    ok_ = false;
    return false;
  }

  // The member `name` of `object`, or nullptr when absent (then `required`
  // fails).
  const json* Member(const json& object, const std::string& path,
                     const char* name, bool required) {
    if (!ok_) return nullptr;
    auto it = object.find(name);
    if (it == object.end()) {
      if (required) Fail(Join(path, name), "missing");
      return nullptr;
    }
    return &*it;
  }

  template <typename T>
  void Unsigned(const json& object, const std::string& path, const char* name,
                bool required, T* out) {
    const json* v = Member(object, path, name, required);
    if (v == nullptr) return;
    bool negative = v->is_number_integer() && !v->is_number_unsigned() &&
                    v->get<int64_t>() < 0;
    if (!v->is_number_integer() || negative) {
      Fail(Join(path, name), "expected an unsigned integer");
      return;
    }
    uint64_t value = v->get<uint64_t>();
    if (value > std::numeric_limits<T>::max()) {
      Fail(Join(path, name), "out of range");
      return;
    }
    *out = static_cast<T>(value);
  }

  void Int(const json& object, const std::string& path, const char* name,
           int* out) {
    const json* v = Member(object, path, name, false);
    if (v == nullptr) return;
    if (!v->is_number_integer()) {
      Fail(Join(path, name), "expected an integer");
      return;
    }
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      Fail(Join(path, name), "out of range");
      return;
    }
    int64_t value = v->get<int64_t>();
    if (value < std::numeric_limits<int>::min() ||
        value > std::numeric_limits<int>::max()) {
      Fail(Join(path, name), "out of range");
      return;
    }
    *out = static_cast<int>(value);
  }

  void Double(const json& object, const std::string& path, const char* name,
              double* out) {
    const json* v = Member(object, path, name, false);
    if (v == nullptr) return;
    if (!v->is_number()) {
      Fail(Join(path, name), "expected a number");
      return;
    }
    *out = v->get<double>();
  }

  void Bool(const json& object, const std::string& path, const char* name,
            bool* out) {
    const json* v = Member(object, path, name, false);
    if (v == nullptr) return;
    if (!v->is_boolean()) {
      Fail(Join(path, name), "expected true or false");
      return;
    }
    *out = v->get<bool>();
  }

  void String(const json& object, const std::string& path, const char* name,
              std::string* out) {
    const json* v = Member(object, path, name, false);
    if (v == nullptr) return;
    if (!v->is_string()) {
      Fail(Join(path, name), "expected a string");
      return;
    }
    *out = v->get<std::string>();
  }

  // "0x1f00" as gmt_snapshot_json() writes it, or a plain unsigned number.
  void Address(const json& object, const std::string& path, const char* name,
               bool required, uintptr_t* out) {
    const json* v = Member(object, path, name, required);
    if (v == nullptr) return;
    if (v->is_number()) {
      Unsigned(object, path, name, required, out);
      return;
    }
    const std::string* text =
        v->is_string() ? v->get_ptr<const std::string*>() : nullptr;
    uintptr_t value = 0;
    if (text == nullptr || text->size() < 3 || (*text)[0] != '0' ||
        ((*text)[1] != 'x' && (*text)[1] != 'X')) {
      Fail(Join(path, name), "expected a \"0x...\" address");
      return;
    }
    const char* begin = text->data() + 2;
    const char* end = text->data() + text->size();
    auto [ptr, ec] = std::from_chars(begin, end, value, 16);
    if (ec != std::errc() || ptr != end) {
      Fail(Join(path, name), "expected a \"0x...\" address");
      return;
    }
    *out = value;
  }

  // The array member `name`, or nullptr (absent and optional, or a failure).
  const json* Array(const json& object, const std::string& path,
                    const char* name, bool required) {
    const json* v = Member(object, path, name, required);
    if (v == nullptr) return nullptr;
    if (!v->is_array()) {
      Fail(Join(path, name), "expected an array");
      return nullptr;
    }
    return v;
  }

  bool Object(const json& v, const std::string& path) {
    if (!ok_) return false;
    if (!v.is_object()) return Fail(path, "expected an object");
    return true;
  }

  static std::string Join(const std::string& path, const char* name) {
    return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
  }
  static std::string Item(const std::string& path, const char* name, size_t i) {
    return absl::StrCat(Join(path, name), "[", i, "]");
  }

 private:
  std::string* error_;
  bool ok_ = true;
};

void ReadFrame(Reader& r, const json& v, const std::string& path, Frame* f) {
  if (!r.Object(v, path)) return;
  r.Address(v, path, "address", false, &f->address);
  r.String(v, path, "function", &f->function);
  r.String(v, path, "file", &f->file);
  r.Int(v, path, "line", &f->line);
  r.String(v, path, "module", &f->module);
}

void ReadAllocation(Reader& r, const json& v, const std::string& path,
                    Allocation* a) {
  if (!r.Object(v, path)) return;
  r.Address(v, path, "address", true, &a->address);
  r.Unsigned(v, path, "bytes", true, &a->bytes);
  r.Int(v, path, "device", &a->device);
  r.String(v, path, "api", &a->api);
  r.String(v, path, "kind", &a->kind);
  r.Unsigned(v, path, "stream", false, &a->stream);
  r.Unsigned(v, path, "thread", false, &a->thread);
  r.Double(v, path, "time_s", &a->time_s);
  if (const json* stack = r.Array(v, path, "stack", false)) {
    a->stack.resize(stack->size());
    for (size_t i = 0; i < stack->size() && r.ok(); ++i) {
      ReadFrame(r, (*stack)[i], Reader::Item(path, "stack", i), &a->stack[i]);
    }
  }
}

void ReadDevice(Reader& r, const json& v, const std::string& path,
                DeviceUsage* d) {
  if (!r.Object(v, path)) return;
  r.Int(v, path, "device", &d->device);
  r.Unsigned(v, path, "live_bytes", false, &d->live_bytes);
  r.Unsigned(v, path, "peak_bytes", false, &d->peak_bytes);
  r.Unsigned(v, path, "allocations", false, &d->allocations);
  r.Unsigned(v, path, "frees", false, &d->frees);
}

// Parses one C argument of gmt_diff_json(); false and `error` set on failure.
bool ParseSnapshotArgument(const char* text, const char* name, Snapshot* out,
                           std::string* error) {
  if (text == nullptr) {
    *error = absl::StrCat(name, " is NULL");
    return false;
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at ..." minus the tag.
    absl::string_view what = e.what();
    if (size_t close = what.find("] "); close != absl::string_view::npos) {
      what.remove_prefix(close + 2);
    }
    *error = absl::StrCat(name, " is not valid JSON: ", what);
    return false;
  }
  std::string problem;
  if (!SnapshotFromJson(doc, out, &problem)) {
    *error =
        absl::StrCat(name, " is not a gmt_snapshot_json() document: ", problem);
    return false;
  }
  return true;
}

}  // namespace

SnapshotDiff DiffSnapshots(const Snapshot& before, const Snapshot& after) {
  SnapshotDiff diff;
  diff.active = before.active && after.active;

  // Blocks of `before` not yet matched, by identity. A vector per key so
  // that even duplicate entries (hand-made documents) pair up one to one.
  absl::flat_hash_map<BlockKey, std::vector<size_t>> unmatched;
  for (size_t i = 0; i < before.allocations.size(); ++i) {
    unmatched[KeyOf(before.allocations[i])].push_back(i);
  }
  std::vector<bool> kept(before.allocations.size(), false);
  std::map<int, DeviceDiff, bool (*)(int, int)> devices(DeviceOrder);

  Grouper added;
  for (const Allocation& a : after.allocations) {
    auto it = unmatched.find(KeyOf(a));
    if (it != unmatched.end() && !it->second.empty()) {
      kept[it->second.back()] = true;
      it->second.pop_back();
      continue;
    }
    added.Add(a);
    ++diff.new_count;
    diff.new_bytes += a.bytes;
    DeviceDiff& d = devices[a.device];
    d.device = a.device;
    d.new_bytes += a.bytes;
  }
  Grouper freed;
  for (size_t i = 0; i < before.allocations.size(); ++i) {
    if (kept[i]) continue;
    const Allocation& a = before.allocations[i];
    freed.Add(a);
    ++diff.freed_count;
    diff.freed_bytes += a.bytes;
    DeviceDiff& d = devices[a.device];
    d.device = a.device;
    d.freed_bytes += a.bytes;
  }
  diff.added = added.Take();
  diff.freed = freed.Take();
  for (auto& [device, d] : devices) {
    d.net_bytes =
        static_cast<int64_t>(d.new_bytes) - static_cast<int64_t>(d.freed_bytes);
    diff.devices.push_back(d);
  }
  diff.net_bytes = static_cast<int64_t>(diff.new_bytes) -
                   static_cast<int64_t>(diff.freed_bytes);
  return diff;
}

std::string RenderDiffText(const SnapshotDiff& diff, int pid) {
  TextOut out(pid);
  out.Line(
      "gpumemtrace snapshot diff: %s (%s) from %s, %s (%s) from %s; net %s",
      Plural(diff.new_count, "new block", "new blocks"),
      HumanBytes(diff.new_bytes),
      Plural(diff.added.size(), "call site", "call sites"),
      Plural(diff.freed_count, "freed block", "freed blocks"),
      HumanBytes(diff.freed_bytes),
      Plural(diff.freed.size(), "call site", "call sites"),
      SignedBytes(diff.net_bytes));
  if (!diff.active) {
    out.Line(
        "note: a snapshot came from an inactive tracer (enabled=0, or not "
        "loaded): nothing to compare");
  }
  for (const DeviceDiff& d : diff.devices) {
    out.Line("%s: new %s, freed %s, net %s",
             d.device < 0 ? std::string("pinned host") : DeviceLabel(d.device),
             HumanBytes(d.new_bytes), HumanBytes(d.freed_bytes),
             SignedBytes(d.net_bytes));
  }
  if (diff.added.empty() && diff.freed.empty()) {
    out.Line("no blocks were allocated or freed between the snapshots");
  }
  if (!diff.added.empty()) {
    out.Blank();
    PrintGroups(out, "NEW", diff.added);
  }
  if (!diff.freed.empty()) {
    out.Blank();
    PrintGroups(out, "FREED", diff.freed);
  }
  out.Blank();
  return out.Take();
}

json SnapshotToJson(const Snapshot& snap) {
  json out = {{"active", snap.active},
              {"live_bytes", snap.live_bytes},
              {"peak_bytes", snap.peak_bytes},
              {"errors", snap.errors}};
  out["devices"] = json::array();
  for (const DeviceUsage& d : snap.devices) {
    out["devices"].push_back({{"device", d.device},
                              {"live_bytes", d.live_bytes},
                              {"peak_bytes", d.peak_bytes},
                              {"allocations", d.allocations},
                              {"frees", d.frees}});
  }
  out["allocations"] = json::array();
  for (const Allocation& a : snap.allocations) {
    out["allocations"].push_back(
        {{"address", absl::StrFormat("0x%x", a.address)},
         {"bytes", a.bytes},
         {"device", a.device},
         {"api", a.api},
         {"kind", a.kind},
         {"stream", a.stream},
         {"thread", a.thread},
         {"time_s", a.time_s},
         {"stack", StackToJson(a.stack)}});
  }
  return out;
}

bool SnapshotFromJson(const json& doc, Snapshot* out, std::string* error) {
  *out = Snapshot();
  Reader r(error);
  if (!doc.is_object()) {
    *error = "expected a JSON object";
    return false;
  }
  const std::string top;
  r.Bool(doc, top, "active", &out->active);
  r.Unsigned(doc, top, "live_bytes", false, &out->live_bytes);
  r.Unsigned(doc, top, "peak_bytes", false, &out->peak_bytes);
  r.Unsigned(doc, top, "errors", false, &out->errors);
  if (const json* devices = r.Array(doc, top, "devices", false)) {
    out->devices.resize(devices->size());
    for (size_t i = 0; i < devices->size() && r.ok(); ++i) {
      ReadDevice(r, (*devices)[i], Reader::Item(top, "devices", i),
                 &out->devices[i]);
    }
  }
  if (const json* allocations = r.Array(doc, top, "allocations", true)) {
    out->allocations.resize(allocations->size());
    for (size_t i = 0; i < allocations->size() && r.ok(); ++i) {
      ReadAllocation(r, (*allocations)[i], Reader::Item(top, "allocations", i),
                     &out->allocations[i]);
    }
  }
  return r.ok();
}

json DiffToJson(const SnapshotDiff& diff) {
  json out = {
      {"active", diff.active},           {"new_count", diff.new_count},
      {"new_bytes", diff.new_bytes},     {"freed_count", diff.freed_count},
      {"freed_bytes", diff.freed_bytes}, {"net_bytes", diff.net_bytes}};
  out["devices"] = json::array();
  for (const DeviceDiff& d : diff.devices) {
    out["devices"].push_back({{"device", d.device},
                              {"new_bytes", d.new_bytes},
                              {"freed_bytes", d.freed_bytes},
                              {"net_bytes", d.net_bytes}});
  }
  out["new"] = GroupsToJson(diff.added);
  out["freed"] = GroupsToJson(diff.freed);
  return out;
}

std::string DiffJsonText(const char* before_json, const char* after_json) {
  try {
    Snapshot before;
    Snapshot after;
    std::string error;
    if (!ParseSnapshotArgument(before_json, "before_json", &before, &error) ||
        !ParseSnapshotArgument(after_json, "after_json", &after, &error)) {
      return ErrorDocument(error);
    }
    return Dump(DiffToJson(DiffSnapshots(before, after)));
  } catch (const std::exception& e) {
    // Only std::bad_alloc is expected here; a message beats a crash.
    try {
      return ErrorDocument(absl::StrCat("internal error: ", e.what()));
    } catch (...) {
    }
  } catch (...) {
  }
  return "{\"error\":\"internal error\"}";
}

}  // namespace gmt
