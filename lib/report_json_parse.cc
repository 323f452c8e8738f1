#include "lib/report_json_parse.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/api.h"
#include "lib/clock.h"
#include "lib/errors.h"

namespace gmt {
namespace {

using nlohmann::json;

// Report times are at most this many seconds after the start (about 31
// years): enough for any run, small enough that nanoseconds fit an int64_t.
// Under 2^53 ns (104 days): the nanoseconds are then exact in a double, so a
// time read, written and read again comes back the same (the report_parse
// fuzzer found a drift at 1e9 s).
constexpr double kMaxSeconds = 9e6;

// One pass over one document. Each Read* returns false after setting
// `error_` to "<path>: <problem>"; an absent optional field leaves its
// output untouched and succeeds.
class ReportReader {
 public:
  explicit ReportReader(ReportData* data) : data_(data) {}

  const std::string& error() const { return error_; }

  bool ReadReport(const json& doc);

 private:
  bool Fail(const std::string& path, absl::string_view problem) {
    error_ = absl::StrCat(path, ": ", problem);
    return false;
  }

  static std::string Join(const std::string& path, absl::string_view key) {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  }
  static std::string Index(const std::string& path, size_t i) {
    return absl::StrCat(path, "[", i, "]");
  }

  // The member `key` of `obj`, or nullptr when absent (or JSON null).
  static const json* Member(const json& obj, absl::string_view key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  bool ReadU64(const json& obj, const std::string& path, absl::string_view key,
               uint64_t* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->is_number_unsigned()) {
      return Fail(Join(path, key), "expected an unsigned integer");
    }
    *out = v->get<uint64_t>();
    return true;
  }

  bool ReadI64(const json& obj, const std::string& path, absl::string_view key,
               int64_t lo, int64_t hi, int64_t* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->is_number_integer()) {
      return Fail(Join(path, key), "expected an integer");
    }
    if (v->is_number_unsigned()) {
      uint64_t u = v->get<uint64_t>();
      if (hi < 0 || u > static_cast<uint64_t>(hi)) {
        return Fail(Join(path, key),
                    absl::StrCat("out of range (", lo, " to ", hi, ")"));
      }
      *out = static_cast<int64_t>(u);
      return true;
    }
    int64_t s = v->get<int64_t>();
    if (s < lo || s > hi) {
      return Fail(Join(path, key),
                  absl::StrCat("out of range (", lo, " to ", hi, ")"));
    }
    *out = s;
    return true;
  }

  bool ReadInt(const json& obj, const std::string& path, absl::string_view key,
               int* out) {
    int64_t v = *out;
    if (!ReadI64(obj, path, key, std::numeric_limits<int>::min(),
                 std::numeric_limits<int>::max(), &v)) {
      return false;
    }
    *out = static_cast<int>(v);
    return true;
  }

  bool ReadU32(const json& obj, const std::string& path, absl::string_view key,
               uint32_t* out) {
    int64_t v = *out;
    if (!ReadI64(obj, path, key, 0, std::numeric_limits<uint32_t>::max(), &v)) {
      return false;
    }
    *out = static_cast<uint32_t>(v);
    return true;
  }

  bool ReadBool(const json& obj, const std::string& path, absl::string_view key,
                bool* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->is_boolean())
      return Fail(Join(path, key), "expected true or false");
    *out = v->get<bool>();
    return true;
  }

  bool ReadString(const json& obj, const std::string& path,
                  absl::string_view key, std::string* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->is_string()) return Fail(Join(path, key), "expected a string");
    *out = v->get<std::string>();
    return true;
  }

  bool ReadStrings(const json& obj, const std::string& path,
                   absl::string_view key, std::vector<std::string>* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    const std::string here = Join(path, key);
    if (!v->is_array()) return Fail(here, "expected an array of strings");
    out->clear();
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string())
        return Fail(Index(here, i), "expected a string");
      out->push_back((*v)[i].get<std::string>());
    }
    return true;
  }

  // "0x1f" (as the writer prints addresses) or a plain unsigned number.
  bool ReadAddress(const json& obj, const std::string& path,
                   absl::string_view key, uint64_t* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    if (v->is_number_unsigned()) {
      *out = v->get<uint64_t>();
      return true;
    }
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      if (s.size() > 2 && s.size() <= 18 &&
          (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X")) &&
          s.find_first_not_of("0123456789abcdefABCDEF", 2) ==
              std::string::npos &&
          absl::SimpleHexAtoi(absl::string_view(s).substr(2), out)) {
        return true;
      }
    }
    return Fail(Join(path, key), "expected an address (\"0x...\")");
  }

  // time_s: seconds after the traced program's start, kept as the monotonic
  // nanoseconds that the writers turn back into the same seconds here.
  bool ReadTime(const json& obj, const std::string& path, absl::string_view key,
                int64_t* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->is_number()) return Fail(Join(path, key), "expected a number");
    double seconds = v->get<double>();
    // A little slack above the bound: a value at the bound, turned into
    // nanoseconds and back by the writer, may come out a few ulps larger, and
    // the writer's own output must read back (found by the report_parse
    // fuzzer: time_s 1e9 came back as 1000000000.0000001).
    if (!std::isfinite(seconds) ||
        std::fabs(seconds) > kMaxSeconds * (1 + 1e-9)) {
      return Fail(Join(path, key), "out of range");
    }
    *out = std::llround(seconds * 1e9) - SinceStartNs(0);
    return true;
  }

  bool ReadApi(const json& obj, const std::string& path, Api* out) {
    std::string name;
    if (!ReadString(obj, path, "api", &name)) return false;
    if (Member(obj, "api") == nullptr) return true;
    for (int i = 0; i <= static_cast<int>(Api::kUnknown); ++i) {
      if (ApiName(static_cast<Api>(i)) == name) {
        *out = static_cast<Api>(i);
        return true;
      }
    }
    *out = Api::kUnknown;
    data_->notes.push_back(absl::StrCat(Join(path, "api"), ": '", name,
                                        "' is not known to this version"));
    return true;
  }

  bool ReadKind(const json& obj, const std::string& path, MemoryKind* out) {
    std::string name;
    if (!ReadString(obj, path, "kind", &name)) return false;
    if (Member(obj, "kind") == nullptr) return true;
    for (int i = 0; i < kMemoryKindCount; ++i) {
      if (MemoryKindName(static_cast<MemoryKind>(i)) == name) {
        *out = static_cast<MemoryKind>(i);
        return true;
      }
    }
    data_->notes.push_back(absl::StrCat(Join(path, "kind"), ": '", name,
                                        "' is not known to this version"));
    return true;
  }

  bool RequireObject(const json& v, const std::string& path) {
    return v.is_object() ? true : Fail(path, "expected an object");
  }

  // A stack array becomes a fresh id in data_->stacks; an empty or absent
  // one stays kNoStack (the writers print [] for both).
  bool ReadStack(const json& obj, const std::string& path, StackId* out) {
    const json* v = Member(obj, "stack");
    if (v == nullptr) return true;
    const std::string here = Join(path, "stack");
    if (!v->is_array()) return Fail(here, "expected an array of frames");
    if (v->empty()) return true;
    if (next_stack_ == std::numeric_limits<StackId>::max()) {
      return Fail(here, "too many stacks");
    }
    std::vector<SymbolizedFrame> frames;
    for (size_t i = 0; i < v->size(); ++i) {
      const json& f = (*v)[i];
      const std::string at = Index(here, i);
      if (!RequireObject(f, at)) return false;
      SymbolizedFrame frame;
      uint64_t address = 0;
      if (!ReadAddress(f, at, "address", &address) ||
          !ReadString(f, at, "function", &frame.function) ||
          !ReadString(f, at, "module", &frame.module) ||
          !ReadString(f, at, "file", &frame.file) ||
          !ReadInt(f, at, "line", &frame.line)) {
        return false;
      }
      frame.address = static_cast<uintptr_t>(address);
      frames.push_back(std::move(frame));
    }
    StackId id = ++next_stack_;
    data_->stacks[id] = std::move(frames);
    *out = id;
    return true;
  }

  bool ReadArray(const json& doc, absl::string_view key, const json** out) {
    *out = Member(doc, key);
    if (*out != nullptr && !(*out)->is_array()) {
      return Fail(std::string(key), "expected an array");
    }
    return true;
  }

  bool ReadDevice(const json& d, const std::string& at,
                  ReportData::Device* device) {
    return RequireObject(d, at) && ReadInt(d, at, "index", &device->index) &&
           ReadString(d, at, "name", &device->name) &&
           ReadU64(d, at, "total_bytes", &device->total_bytes) &&
           ReadU64(d, at, "peak_bytes", &device->peak_bytes) &&
           ReadU64(d, at, "live_bytes", &device->live_bytes) &&
           ReadU64(d, at, "allocations", &device->allocations) &&
           ReadU64(d, at, "frees", &device->frees);
  }

  bool ReadLeak(const json& l, const std::string& at, ReportData::Leak* leak) {
    uint64_t address = 0;
    if (!RequireObject(l, at) || !ReadApi(l, at, &leak->api) ||
        !ReadKind(l, at, &leak->kind) ||
        !ReadU64(l, at, "bytes", &leak->bytes) ||
        !ReadU64(l, at, "count", &leak->count) ||
        !ReadAddress(l, at, "address", &address) ||
        !ReadInt(l, at, "device", &leak->device) ||
        !ReadStack(l, at, &leak->stack) ||
        !ReadString(l, at, "released_by", &leak->released_by) ||
        !ReadString(l, at, "suppression", &leak->suppression) ||
        !ReadString(l, at, "state", &leak->state) ||
        !ReadString(l, at, "reachable_via", &leak->reachable_via) ||
        !ReadString(l, at, "nvtx_range", &leak->nvtx_range)) {
      return false;
    }
    leak->address = address;
    return true;
  }

  bool ReadAllocation(const json& a, const std::string& at,
                      AllocationRecord* record) {
    int device = record->device;
    if (!RequireObject(a, at) || !ReadApi(a, at, &record->api) ||
        !ReadKind(a, at, &record->kind) ||
        !ReadAddress(a, at, "address", &record->address) ||
        !ReadU64(a, at, "bytes", &record->bytes) ||
        !ReadInt(a, at, "device", &device) ||
        !ReadU32(a, at, "thread", &record->thread) ||
        !ReadTime(a, at, "time_s", &record->time_ns) ||
        !ReadStack(a, at, &record->stack)) {
      return false;
    }
    record->device = device;
    return true;
  }

  bool ReadErrorKind(const json& e, const std::string& at, ErrorKind* out) {
    std::string name;
    if (!ReadString(e, at, "kind", &name)) return false;
    if (Member(e, "kind") == nullptr) {
      return Fail(Join(at, "kind"), "missing (every error has a kind)");
    }
#define GMT_ERROR_MATCH(Enum, Name, Meaning) \
  if (name == Name) {                        \
    *out = ErrorKind::Enum;                  \
    return true;                             \
  }
    GMT_ERROR_KINDS(GMT_ERROR_MATCH)
#undef GMT_ERROR_MATCH
    return Fail(Join(at, "kind"),
                absl::StrCat("unknown error kind '", name, "'"));
  }

  bool ReadError(const json& e, const std::string& at, ErrorRecord* error) {
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    if (!RequireObject(e, at) || !ReadErrorKind(e, at, &error->kind) ||
        !ReadApi(e, at, &error->api) ||
        !ReadAddress(e, at, "address", &error->address) ||
        !ReadI64(e, at, "offset", kMin, kMax, &error->offset) ||
        !ReadU64(e, at, "bytes", &error->bytes) ||
        !ReadString(e, at, "detail", &error->detail) ||
        !ReadInt(e, at, "cuda_result", &error->cuda_result) ||
        !ReadString(e, at, "cuda_error", &error->cuda_result_name) ||
        !ReadU32(e, at, "thread", &error->thread) ||
        !ReadTime(e, at, "time_s", &error->time_ns) ||
        !ReadStrings(e, at, "kernels", &error->kernels) ||
        !ReadStack(e, at, &error->stack) ||
        !ReadString(e, at, "check", &error->check) ||
        !ReadString(e, at, "call", &error->call) ||
        !ReadString(e, at, "suppression", &error->suppression)) {
      return false;
    }
    // The guard-zone range: the writer prints all four or none.
    if (Member(e, "first_offset") != nullptr) {
      error->has_range = true;
      if (!ReadI64(e, at, "first_offset", kMin, kMax, &error->first_offset) ||
          !ReadI64(e, at, "last_offset", kMin, kMax, &error->last_offset) ||
          !ReadU64(e, at, "changed_bytes", &error->changed_bytes) ||
          !ReadU64(e, at, "kernels_omitted", &error->kernels_omitted)) {
        return false;
      }
    }
    if (const json* a = Member(e, "allocation")) {
      AllocationRecord record;
      if (!ReadAllocation(*a, Join(at, "allocation"), &record)) return false;
      error->allocation = record;
    }
    if (const json* f = Member(e, "first_free")) {
      const std::string here = Join(at, "first_free");
      FreedRecord freed;
      if (!RequireObject(*f, here) || !ReadApi(*f, here, &freed.free_api) ||
          !ReadU32(*f, here, "thread", &freed.free_thread) ||
          !ReadStack(*f, here, &freed.free_stack)) {
        return false;
      }
      if (error->allocation) freed.allocation = *error->allocation;
      error->previous_free = freed;
    }
    return true;
  }

  ReportData* data_;
  StackId next_stack_ = kNoStack;
  std::string error_;
};

bool ReportReader::ReadReport(const json& doc) {
  ReportData& d = *data_;
  if (!doc.is_object()) {
    return Fail("not a gpumemtrace report", "the document is not an object");
  }
  const json* tool = Member(doc, "tool");
  if (tool == nullptr || !tool->is_string() || *tool != "gpumemtrace") {
    if (Member(doc, "allocations") != nullptr) {
      return Fail("not a gpumemtrace report",
                  "this looks like a snapshot (gmt_snapshot_json); compare "
                  "two with `gpumemtrace report --diff A.json B.json`");
    }
    return Fail("not a gpumemtrace report", "no \"tool\": \"gpumemtrace\"");
  }
  if (!ReadString(doc, "", "version", &d.version) ||
      !ReadInt(doc, "", "pid", &d.pid) ||
      !ReadStrings(doc, "", "argv", &d.argv) ||
      !ReadString(doc, "", "reason", &d.reason)) {
    return false;
  }

  const json* devices = nullptr;
  if (!ReadArray(doc, "devices", &devices)) return false;
  if (devices != nullptr) {
    for (size_t i = 0; i < devices->size(); ++i) {
      ReportData::Device device;
      if (!ReadDevice((*devices)[i], Index("devices", i), &device)) {
        return false;
      }
      d.devices.push_back(std::move(device));
    }
  }
  d.host.index = -1;
  if (const json* host = Member(doc, "host")) {
    if (!RequireObject(*host, "host") ||
        !ReadU64(*host, "host", "peak_bytes", &d.host.peak_bytes) ||
        !ReadU64(*host, "host", "live_bytes", &d.host.live_bytes) ||
        !ReadU64(*host, "host", "allocations", &d.host.allocations) ||
        !ReadU64(*host, "host", "frees", &d.host.frees)) {
      return false;
    }
  }
  if (const json* s = Member(doc, "summary")) {
    ReportData::Summary& sum = d.summary;
    if (!RequireObject(*s, "summary") ||
        !ReadU64(*s, "summary", "allocations", &sum.allocations) ||
        !ReadU64(*s, "summary", "frees", &sum.frees) ||
        !ReadU64(*s, "summary", "live_bytes_at_exit",
                 &sum.live_bytes_at_exit) ||
        !ReadU64(*s, "summary", "errors", &sum.errors) ||
        !ReadU64(*s, "summary", "leaks", &sum.leaks) ||
        !ReadU64(*s, "summary", "leaked_bytes", &sum.leaked_bytes) ||
        !ReadU64(*s, "summary", "untracked_frees", &sum.untracked_frees) ||
        !ReadU64(*s, "summary", "suppressed_errors", &sum.suppressed_errors) ||
        !ReadU64(*s, "summary", "suppressed_leaks", &sum.suppressed_leaks)) {
      return false;
    }
  }
  if (!ReadBool(doc, "", "leak_check", &d.leak_check)) return false;

  const json* leaks = nullptr;
  if (!ReadArray(doc, "leaks", &leaks)) return false;
  if (leaks != nullptr) {
    for (size_t i = 0; i < leaks->size(); ++i) {
      ReportData::Leak leak;
      if (!ReadLeak((*leaks)[i], Index("leaks", i), &leak)) return false;
      d.leaks.push_back(std::move(leak));
    }
  }
  const json* errors = nullptr;
  if (!ReadArray(doc, "errors", &errors)) return false;
  if (errors != nullptr) {
    for (size_t i = 0; i < errors->size(); ++i) {
      ErrorRecord error;
      if (!ReadError((*errors)[i], Index("errors", i), &error)) return false;
      d.errors.push_back(std::move(error));
    }
  }
  if (!ReadU64(doc, "", "errors_dropped", &d.errors_dropped)) return false;
  const json* suppressions = nullptr;
  if (!ReadArray(doc, "suppressions", &suppressions)) return false;
  if (suppressions != nullptr) {
    for (size_t i = 0; i < suppressions->size(); ++i) {
      const json& s = (*suppressions)[i];
      const std::string at = Index("suppressions", i);
      ReportData::SuppressionUse use;
      if (!RequireObject(s, at) || !ReadString(s, at, "rule", &use.rule) ||
          !ReadString(s, at, "file", &use.file) ||
          !ReadInt(s, at, "line", &use.line) ||
          !ReadU64(s, at, "hits", &use.hits)) {
        return false;
      }
      d.suppressions.push_back(std::move(use));
    }
  }
  if (const json* g = Member(doc, "guard")) {
    ReportData::Guard& guard = d.guard;
    const std::string at = "guard";
    if (!RequireObject(*g, at) ||
        !ReadBool(*g, at, "enabled", &guard.enabled) ||
        !ReadString(*g, at, "check", &guard.check) ||
        !ReadU64(*g, at, "guarded", &guard.guarded) ||
        !ReadU64(*g, at, "unguarded_oom", &guard.unguarded_oom) ||
        !ReadU64(*g, at, "unguarded_capture", &guard.unguarded_capture) ||
        !ReadU64(*g, at, "checks", &guard.checks) ||
        !ReadU64(*g, at, "check_failures", &guard.check_failures) ||
        !ReadU64(*g, at, "fill_failures", &guard.fill_failures) ||
        !ReadU64(*g, at, "bytes_checked", &guard.bytes_checked) ||
        !ReadU64(*g, at, "quarantine_bytes", &guard.quarantine_bytes) ||
        !ReadU64(*g, at, "evicted", &guard.evicted)) {
      return false;
    }
  }
  // Notes made while reading (unknown API names) come after the report's own.
  std::vector<std::string> reading_notes = std::move(d.notes);
  d.notes.clear();
  if (!ReadStrings(doc, "", "notes", &d.notes)) return false;
  for (std::string& note : reading_notes) d.notes.push_back(std::move(note));
  return true;
}

}  // namespace

bool ParseReportJson(absl::string_view text, ReportData* out,
                     std::string* error) {
  json doc = json::parse(text.begin(), text.end(), nullptr,
                         /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    // Say where: nlohmann's exception carries the byte position.
    try {
      const json unexpected = json::parse(text.begin(), text.end());
      static_cast<void>(unexpected);
      *error = "not JSON";
    } catch (const json::exception& e) {
      *error = absl::StrCat("not JSON: ", e.what());
    }
    return false;
  }
  *out = ReportData();
  ReportReader reader(out);
  try {
    if (reader.ReadReport(doc)) return true;
    *error = reader.error();
  } catch (const std::exception& e) {
    // Not expected (every access is type-checked first); a report reader
    // must still never take the launcher down.
    *error = absl::StrCat("unreadable report: ", e.what());
  }
  return false;
}

}  // namespace gmt
