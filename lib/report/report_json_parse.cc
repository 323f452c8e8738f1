#include "lib/report/report_json_parse.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/core/api.h"
#include "lib/core/clock.h"
#include "lib/report/errors.h"
#include "lib/report/health_reading.h"

namespace gmt {
namespace {

using nlohmann::json;

// Report times are at most this many seconds after the start (about 31
// years): enough for any run, small enough that nanoseconds fit an int64_t.
// Under 2^53 ns (104 days): the nanoseconds are then exact in a double, so a
// time read, written and read again comes back the same (the report_parse
// fuzzer found a drift at 1e9 s).
constexpr double kMaxSeconds = 9e6;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

bool SameFrames(const std::vector<SymbolizedFrame>& a,
                const std::vector<SymbolizedFrame>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].address != b[i].address || a[i].function != b[i].function ||
        a[i].file != b[i].file || a[i].line != b[i].line ||
        a[i].module != b[i].module) {
      return false;
    }
  }
  return true;
}

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

  // ---- Values (`v` at `here`) ----

  // Integers only: a number with a fraction or exponent ("1.0", "1e3") is
  // refused rather than rounded, so byte counts up to 2^64 - 1 stay exact.
  bool U64Value(const json& v, const std::string& here, uint64_t* out) {
    if (!v.is_number_unsigned()) {
      return Fail(here, "expected an unsigned integer");
    }
    *out = v.get<uint64_t>();
    return true;
  }

  bool I64Value(const json& v, const std::string& here, int64_t lo, int64_t hi,
                int64_t* out) {
    if (!v.is_number_integer()) return Fail(here, "expected an integer");
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (hi < 0 || u > static_cast<uint64_t>(hi)) {
        return Fail(here, absl::StrCat("out of range (", lo, " to ", hi, ")"));
      }
      *out = static_cast<int64_t>(u);
      return true;
    }
    int64_t s = v.get<int64_t>();
    if (s < lo || s > hi) {
      return Fail(here, absl::StrCat("out of range (", lo, " to ", hi, ")"));
    }
    *out = s;
    return true;
  }

  // ---- Members (`obj[key]` at Join(path, key)) ----

  bool ReadU64(const json& obj, const std::string& path, absl::string_view key,
               uint64_t* out) {
    const json* v = Member(obj, key);
    return v == nullptr || U64Value(*v, Join(path, key), out);
  }

  bool ReadI64(const json& obj, const std::string& path, absl::string_view key,
               int64_t lo, int64_t hi, int64_t* out) {
    const json* v = Member(obj, key);
    return v == nullptr || I64Value(*v, Join(path, key), lo, hi, out);
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

  // A plain number kept as a double (durations, seconds of growth samples,
  // kernel launches and Xid events): any finite value, written back by the
  // writer as the same double.
  bool ReadDouble(const json& obj, const std::string& path,
                  absl::string_view key, double* out) {
    const json* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->is_number()) return Fail(Join(path, key), "expected a number");
    const double d = v->get<double>();
    if (!std::isfinite(d)) return Fail(Join(path, key), "out of range");
    *out = d;
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
    return ReadApiNamed(obj, path, "api", out);
  }

  bool ReadApiNamed(const json& obj, const std::string& path,
                    absl::string_view key, Api* out) {
    std::string name;
    if (!ReadString(obj, path, key, &name)) return false;
    if (Member(obj, key) == nullptr) return true;
    for (int i = 0; i <= static_cast<int>(Api::kUnknown); ++i) {
      if (ApiName(static_cast<Api>(i)) == name) {
        *out = static_cast<Api>(i);
        return true;
      }
    }
    *out = Api::kUnknown;
    data_->notes.push_back(absl::StrCat(Join(path, key), ": '", name,
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

  // The object member `key` of `obj`, or nullptr (absent or null) in *out.
  bool ReadObject(const json& obj, const std::string& path,
                  absl::string_view key, const json** out) {
    *out = Member(obj, key);
    if (*out != nullptr && !(*out)->is_object()) {
      return Fail(Join(path, key), "expected an object");
    }
    return true;
  }

  // The array member `key` of `obj`, or nullptr (absent or null) in *out.
  bool ReadArray(const json& obj, const std::string& path,
                 absl::string_view key, const json** out) {
    *out = Member(obj, key);
    if (*out != nullptr && !(*out)->is_array()) {
      return Fail(Join(path, key), "expected an array");
    }
    return true;
  }

  // ---- Stacks ----

  // The frames of obj["stack"] (absent: none).
  bool ReadFrames(const json& obj, const std::string& path,
                  std::vector<SymbolizedFrame>* out) {
    const json* v = Member(obj, "stack");
    if (v == nullptr) return true;
    const std::string here = Join(path, "stack");
    if (!v->is_array()) return Fail(here, "expected an array of frames");
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
      out->push_back(std::move(frame));
    }
    return true;
  }

  // A stack array becomes a fresh id in data_->stacks; an empty or absent
  // one stays kNoStack (the writers print [] for both). Fresh ids skip the
  // ids the document names itself (reserved_).
  bool ReadStack(const json& obj, const std::string& path, StackId* out) {
    std::vector<SymbolizedFrame> frames;
    if (!ReadFrames(obj, path, &frames)) return false;
    if (frames.empty()) return true;
    do {
      if (next_stack_ == std::numeric_limits<StackId>::max()) {
        return Fail(Join(path, "stack"), "too many stacks");
      }
      ++next_stack_;
    } while (reserved_.contains(next_stack_));
    data_->stacks[next_stack_] = std::move(frames);
    *out = next_stack_;
    return true;
  }

  // A stack the writer names by its id ("stack_id", as growth entries do)
  // keeps that id, so the id the report prints comes back the same. Every
  // entry naming one id must give the same frames.
  bool ReadStackWithId(const json& obj, const std::string& path, StackId* out) {
    if (Member(obj, "stack_id") == nullptr) return ReadStack(obj, path, out);
    uint32_t id = 0;
    std::vector<SymbolizedFrame> frames;
    if (!ReadU32(obj, path, "stack_id", &id) ||
        !ReadFrames(obj, path, &frames)) {
      return false;
    }
    if (id == kNoStack && !frames.empty()) {
      // Id 0 is "no stack": frames kept under it would show in every entry
      // without one.
      return Fail(Join(path, "stack"), "frames given for stack_id 0 (none)");
    }
    auto [it, inserted] = named_stacks_.try_emplace(id, path, frames);
    if (!inserted && !SameFrames(it->second.second, frames)) {
      return Fail(Join(path, "stack"),
                  absl::StrCat("differs from the stack of ", it->second.first,
                               " (same stack_id ", id, ")"));
    }
    if (!frames.empty()) data_->stacks[id] = std::move(frames);
    *out = id;
    return true;
  }

  // The stack ids the document names (growth[].stack_id, the crash's
  // blocks), so that fresh ids do not take them. Type errors are left to the
  // full read.
  void ReserveNamedStacks(const json& doc) {
    auto reserve = [this](const json& obj) {
      if (!obj.is_object()) return;
      auto it = obj.find("stack_id");
      if (it != obj.end() && it->is_number_unsigned() &&
          it->get<uint64_t>() <= std::numeric_limits<StackId>::max()) {
        reserved_.insert(static_cast<StackId>(it->get<uint64_t>()));
      }
    };
    if (auto g = doc.find("growth"); g != doc.end() && g->is_array()) {
      for (const json& entry : *g) reserve(entry);
    }
    if (auto c = doc.find("crash"); c != doc.end() && c->is_object()) {
      if (auto b = c->find("fault_block"); b != c->end()) reserve(*b);
      if (auto l = c->find("live_allocations");
          l != c->end() && l->is_array()) {
        for (const json& block : *l) reserve(block);
      }
    }
  }

  // ---- Sections ----

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
        !ReadString(l, at, "nvtx_range", &leak->nvtx_range) ||
        // NVTX memory regions (outside_block is derived:
        // a region without a pool_block).
        !ReadU64(l, at, "nvtx_regions", &leak->nvtx_regions) ||
        !ReadU64(l, at, "nvtx_region_bytes", &leak->nvtx_region_bytes) ||
        !ReadAddress(l, at, "pool_block", &leak->pool_block) ||
        !ReadApiNamed(l, at, "pool_api", &leak->pool_api) ||
        !ReadAddress(l, at, "heap", &leak->heap) ||
        !ReadString(l, at, "heap_name", &leak->heap_name) ||
        !ReadString(l, at, "region_name", &leak->region_name)) {
      return false;
    }
    leak->address = address;
    return true;
  }

  // The program's NVTX memory-API calls.
  bool ReadNvtxMem(const json& m, ReportData::NvtxMem* out) {
    const std::string at = "nvtx_mem";
    const json* problems = nullptr;
    if (!RequireObject(m, at) ||
        !ReadU64(m, at, "heaps_registered", &out->heaps_registered) ||
        !ReadU64(m, at, "heaps_unregistered", &out->heaps_unregistered) ||
        !ReadU64(m, at, "heap_resets", &out->heap_resets) ||
        !ReadU64(m, at, "regions_registered", &out->regions_registered) ||
        !ReadU64(m, at, "regions_unregistered", &out->regions_unregistered) ||
        !ReadU64(m, at, "regions_resized", &out->regions_resized) ||
        !ReadU64(m, at, "regions_ended_by_heap", &out->regions_ended_by_heap) ||
        !ReadU64(m, at, "regions_ended_by_free", &out->regions_ended_by_free) ||
        !ReadU64(m, at, "live_heaps", &out->live_heaps) ||
        !ReadU64(m, at, "live_regions", &out->live_regions) ||
        !ReadU64(m, at, "live_region_bytes", &out->live_region_bytes) ||
        !ReadObject(m, at, "problems", &problems)) {
      return false;
    }
    out->used = true;
    if (problems == nullptr) return true;
    for (const auto& [name, count] : problems->items()) {
      uint64_t n = 0;
      if (!U64Value(count, Join(Join(at, "problems"), name), &n)) return false;
      out->problems.emplace_back(name, n);
    }
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
  if (name == (Name)) {                      \
    *out = ErrorKind::Enum;                  \
    return true;                             \
  }
    GMT_ERROR_KINDS(GMT_ERROR_MATCH)
#undef GMT_ERROR_MATCH
    return Fail(Join(at, "kind"),
                absl::StrCat("unknown error kind '", name, "'"));
  }

  // The out-of-memory diagnosis: the fields the writer adds to an
  // error that carries one.
  static bool HasOom(const json& e) {
    for (const char* key :
         {"requested", "device", "device_free", "device_total",
          "meminfo_status", "process_bytes", "process_blocks", "holders",
          "holders_omitted", "other_processes", "other_processes_status",
          "reading", "unreported_previous_burst"}) {
      if (Member(e, key) != nullptr) return true;
    }
    return false;
  }

  bool ReadOom(const json& e, const std::string& at, OomDiagnosis* o) {
    if (!ReadU64(e, at, "requested", &o->requested) ||
        !ReadInt(e, at, "device", &o->device) ||
        !ReadString(e, at, "meminfo_status", &o->meminfo_status) ||
        !ReadU64(e, at, "process_bytes", &o->process_bytes) ||
        !ReadU64(e, at, "process_blocks", &o->process_blocks) ||
        !ReadU64(e, at, "holders_omitted", &o->holders_omitted) ||
        !ReadString(e, at, "other_processes_status",
                    &o->other_processes_status) ||
        !ReadString(e, at, "reading", &o->reading) ||
        !ReadU64(e, at, "unreported_previous_burst", &o->earlier_in_burst)) {
      return false;
    }
    // null: cuMemGetInfo failed (the reason is meminfo_status).
    if (Member(e, "device_free") != nullptr) {
      uint64_t v = 0;
      if (!ReadU64(e, at, "device_free", &v)) return false;
      o->device_free = v;
    }
    if (Member(e, "device_total") != nullptr) {
      uint64_t v = 0;
      if (!ReadU64(e, at, "device_total", &v)) return false;
      o->device_total = v;
    }
    const json* holders = nullptr;
    if (!ReadArray(e, at, "holders", &holders)) return false;
    if (holders != nullptr) {
      for (size_t i = 0; i < holders->size(); ++i) {
        const json& h = (*holders)[i];
        const std::string here = Index(Join(at, "holders"), i);
        OomDiagnosis::Holder holder;
        if (!RequireObject(h, here) ||
            !ReadU64(h, here, "bytes", &holder.bytes) ||
            !ReadU64(h, here, "count", &holder.count) ||
            !ReadApi(h, here, &holder.api) ||
            !ReadStack(h, here, &holder.stack)) {
          return false;
        }
        o->holders.push_back(holder);
      }
    }
    const json* others = nullptr;
    if (!ReadArray(e, at, "other_processes", &others)) return false;
    if (others != nullptr) {
      for (size_t i = 0; i < others->size(); ++i) {
        const json& p = (*others)[i];
        const std::string here = Index(Join(at, "other_processes"), i);
        OomDiagnosis::OtherProcess other;
        if (!RequireObject(p, here) || !ReadU32(p, here, "pid", &other.pid) ||
            !ReadString(p, here, "name", &other.name)) {
          return false;
        }
        if (Member(p, "bytes") != nullptr) {  // null: hidden by NVML
          uint64_t bytes = 0;
          if (!ReadU64(p, here, "bytes", &bytes)) return false;
          other.bytes = bytes;
        }
        o->other_processes.push_back(std::move(other));
      }
    }
    return true;
  }

  bool ReadError(const json& e, const std::string& at, ErrorRecord* error) {
    if (!RequireObject(e, at) || !ReadErrorKind(e, at, &error->kind) ||
        !ReadApi(e, at, &error->api) ||
        !ReadAddress(e, at, "address", &error->address) ||
        !ReadI64(e, at, "offset", kI64Min, kI64Max, &error->offset) ||
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
      if (!ReadI64(e, at, "first_offset", kI64Min, kI64Max,
                   &error->first_offset) ||
          !ReadI64(e, at, "last_offset", kI64Min, kI64Max,
                   &error->last_offset) ||
          !ReadU64(e, at, "changed_bytes", &error->changed_bytes) ||
          !ReadU64(e, at, "kernels_omitted", &error->kernels_omitted) ||
          !ReadBool(e, at, "suspects_checked", &error->suspects_checked)) {
        return false;
      }
    }
    if (const json* a = Member(e, "allocation")) {
      AllocationRecord record;
      if (!ReadAllocation(*a, Join(at, "allocation"), &record)) return false;
      error->allocation = record;
    }
    if (HasOom(e)) {
      OomDiagnosis oom;
      if (!ReadOom(e, at, &oom)) return false;
      error->oom = std::move(oom);
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

  // thread_os_ids: [{"thread": 2, "tid": 4242}, ...].
  bool ReadThreadOsIds(const json& doc) {
    std::map<uint32_t, int>& ids = data_->thread_os_ids.emplace();
    const json* list = nullptr;
    if (!ReadArray(doc, "", "thread_os_ids", &list)) return false;
    if (list == nullptr) return true;
    for (size_t i = 0; i < list->size(); ++i) {
      const json& t = (*list)[i];
      const std::string at = Index("thread_os_ids", i);
      uint32_t thread = 0;
      int tid = 0;
      if (!RequireObject(t, at) || !ReadU32(t, at, "thread", &thread) ||
          !ReadInt(t, at, "tid", &tid)) {
        return false;
      }
      if (!ids.emplace(thread, tid).second) {
        return Fail(Join(at, "thread"),
                    absl::StrCat("thread ", thread, " is listed twice"));
      }
    }
    return true;
  }

  // ---- GPU health (lib/report/health_render.h HealthReadingJson) ----

  bool ScalarValue(const json& obj, const std::string& path,
                   absl::string_view key, uint64_t* out) {
    return ReadU64(obj, path, key, out);
  }
  bool ScalarValue(const json& obj, const std::string& path,
                   absl::string_view key, uint32_t* out) {
    return ReadU32(obj, path, key, out);
  }
  bool ScalarValue(const json& obj, const std::string& path,
                   absl::string_view key, int* out) {
    return ReadInt(obj, path, key, out);
  }
  bool ScalarValue(const json& obj, const std::string& path,
                   absl::string_view key, bool* out) {
    return ReadBool(obj, path, key, out);
  }
  bool ScalarValue(const json& obj, const std::string& path,
                   absl::string_view key, std::string* out) {
    return ReadString(obj, path, key, out);
  }

  // One NVML figure: a value, or null with its reason under
  // `missing[key]`; absent: left as it is ("not read").
  template <typename T>
  bool ReadReading(const json& obj, const json* missing,
                   const std::string& path, absl::string_view key,
                   Reading<T>* out) {
    auto it = obj.find(key);
    if (it == obj.end()) return true;
    if (it->is_null()) {
      out->value.reset();
      if (missing != nullptr &&
          !ReadString(*missing, Join(path, "missing"), key, &out->status)) {
        return false;
      }
      return true;
    }
    T value{};
    if (!ScalarValue(obj, path, key, &value)) return false;
    *out = Reading<T>::Of(std::move(value));
    return true;
  }

  bool ReadRemappedRows(const json& d, const json* missing,
                        const std::string& at, Reading<RemappedRows>* out) {
    auto it = d.find("remapped_rows");
    if (it == d.end()) return true;
    if (it->is_null()) {
      out->value.reset();
      return missing == nullptr || ReadString(*missing, Join(at, "missing"),
                                              "remapped_rows", &out->status);
    }
    const std::string here = Join(at, "remapped_rows");
    RemappedRows rows;
    if (!RequireObject(*it, here) ||
        !ReadU32(*it, here, "correctable", &rows.corrected) ||
        !ReadU32(*it, here, "uncorrectable", &rows.uncorrected) ||
        !ReadBool(*it, here, "pending", &rows.pending) ||
        !ReadBool(*it, here, "failure", &rows.failure)) {
      return false;
    }
    *out = Reading<RemappedRows>::Of(rows);
    return true;
  }

  bool ReadDeviceHealth(const json& d, const std::string& at,
                        DeviceHealth* out) {
    const json* missing = nullptr;
    if (!RequireObject(d, at) || !ReadObject(d, at, "missing", &missing) ||
        !ReadInt(d, at, "nvml_index", &out->nvml_index) ||
        !ReadString(d, at, "name", &out->name) ||
        !ReadString(d, at, "uuid", &out->uuid) ||
        !ReadReading(d, missing, at, "memory_total_bytes",
                     &out->memory_total) ||
        !ReadReading(d, missing, at, "memory_used_bytes", &out->memory_used) ||
        !ReadReading(d, missing, at, "memory_reserved_bytes",
                     &out->memory_reserved) ||
        !ReadReading(d, missing, at, "ecc_enabled", &out->ecc_enabled) ||
        !ReadReading(d, missing, at, "ecc_enabled_after_reboot",
                     &out->ecc_pending_enabled) ||
        !ReadReading(d, missing, at, "ecc_corrected_volatile",
                     &out->ecc.volatile_corrected) ||
        !ReadReading(d, missing, at, "ecc_uncorrected_volatile",
                     &out->ecc.volatile_uncorrected) ||
        !ReadReading(d, missing, at, "ecc_corrected_aggregate",
                     &out->ecc.aggregate_corrected) ||
        !ReadReading(d, missing, at, "ecc_uncorrected_aggregate",
                     &out->ecc.aggregate_uncorrected) ||
        !ReadReading(d, missing, at, "retired_pages_single_bit",
                     &out->retired_single_bit) ||
        !ReadReading(d, missing, at, "retired_pages_double_bit",
                     &out->retired_double_bit) ||
        !ReadReading(d, missing, at, "retired_pages_pending",
                     &out->retired_pending) ||
        !ReadRemappedRows(d, missing, at, &out->remapped_rows) ||
        !ReadReading(d, missing, at, "gpu_temp_c", &out->gpu_temp_c) ||
        !ReadReading(d, missing, at, "gpu_temp_slowdown_c",
                     &out->gpu_temp_slowdown_c) ||
        !ReadReading(d, missing, at, "gpu_temp_shutdown_c",
                     &out->gpu_temp_shutdown_c) ||
        !ReadReading(d, missing, at, "gpu_temp_max_c", &out->gpu_temp_max_c) ||
        !ReadReading(d, missing, at, "memory_temp_c", &out->memory_temp_c) ||
        !ReadReading(d, missing, at, "memory_temp_max_c",
                     &out->memory_temp_max_c) ||
        !ReadReading(d, missing, at, "clock_event_reasons",
                     &out->clock_event_reasons)) {
      return false;
    }
    return true;
  }

  bool ReadXid(const json& x, const std::string& at, XidEvent* out) {
    return RequireObject(x, at) && ReadInt(x, at, "device", &out->device) &&
           ReadU64(x, at, "xid", &out->xid) &&
           ReadDouble(x, at, "time_s", &out->time_s);
  }

  // The top-level "health": the whole reading. The per-device copies in
  // devices[].health, the warnings, clock reason names and Xid meanings are
  // recomputed from it by the writers, so they are not read.
  bool ReadHealth(const json& h, HealthReading* r) {
    const std::string at = "health";
    const json* devices = nullptr;
    const json* versions = nullptr;
    const json* xids = nullptr;
    if (!RequireObject(h, at) || !ReadBool(h, at, "available", &r->available) ||
        !ReadString(h, at, "reason", &r->reason) ||
        !ReadString(h, at, "xid_status", &r->xid_status) ||
        !ReadBool(h, at, "xid_watched", &r->xid_watched) ||
        !ReadArray(h, at, "devices", &devices) ||
        !ReadObject(h, at, "versions", &versions) ||
        !ReadArray(h, at, "xid_events", &xids)) {
      return false;
    }
    if (devices != nullptr) {
      for (size_t i = 0; i < devices->size(); ++i) {
        DeviceHealth device;
        if (!ReadDeviceHealth((*devices)[i], Index(Join(at, "devices"), i),
                              &device)) {
          return false;
        }
        r->devices.push_back(std::move(device));
      }
    }
    if (versions != nullptr) {
      const std::string here = Join(at, "versions");
      const json* missing = nullptr;
      VersionInfo& v = r->versions;
      if (!ReadObject(*versions, here, "missing", &missing) ||
          !ReadReading(*versions, missing, here, "driver_version", &v.driver) ||
          !ReadReading(*versions, missing, here, "driver_cuda_version",
                       &v.driver_cuda) ||
          !ReadReading(*versions, missing, here, "runtime_cuda_version",
                       &v.runtime_cuda) ||
          !ReadReading(*versions, missing, here, "cu_driver_cuda_version",
                       &v.cu_driver_cuda)) {
        return false;
      }
    }
    if (xids != nullptr) {
      for (size_t i = 0; i < xids->size(); ++i) {
        XidEvent x;
        if (!ReadXid((*xids)[i], Index(Join(at, "xid_events"), i), &x)) {
          return false;
        }
        r->xids.push_back(x);
      }
      return true;
    }
    // Reports written before health.xid_events: each device's own list
    // (events of devices NVML did not list were not saved then).
    if (devices == nullptr) return true;
    for (size_t i = 0; i < devices->size(); ++i) {
      const std::string here = Index(Join(at, "devices"), i);
      const json* list = nullptr;
      if (!ReadArray((*devices)[i], here, "xid_events", &list)) return false;
      if (list == nullptr) continue;
      for (size_t k = 0; k < list->size(); ++k) {
        XidEvent x;
        x.device = r->devices[i].nvml_index;
        if (!ReadXid((*list)[k], Index(Join(here, "xid_events"), k), &x)) {
          return false;
        }
        r->xids.push_back(x);
      }
    }
    std::stable_sort(r->xids.begin(), r->xids.end(),
                     [](const XidEvent& a, const XidEvent& b) {
                       return a.time_s < b.time_s;
                     });
    return true;
  }

  // ---- The crash report (lib/report/report_crash.h) ----

  bool ReadBlock(const json& b, const std::string& at, AllocationRecord* a) {
    int device = a->device;
    if (!RequireObject(b, at) || !ReadApi(b, at, &a->api) ||
        !ReadKind(b, at, &a->kind) ||
        !ReadAddress(b, at, "address", &a->address) ||
        !ReadU64(b, at, "bytes", &a->bytes) ||
        !ReadInt(b, at, "device", &device) ||
        !ReadU32(b, at, "thread", &a->thread) ||
        !ReadU32(b, at, "stack_id", &a->stack)) {
      return false;
    }
    a->device = device;
    return true;
  }

  bool ReadCrash(const json& c, ReportData::Crash* crash) {
    const std::string at = "crash";
    if (!RequireObject(c, at)) return false;
    crash->present = true;
    if (!ReadString(c, at, "kind", &crash->kind) ||
        !ReadInt(c, at, "thread", &crash->thread) ||
        !ReadInt(c, at, "signal", &crash->signal) ||
        !ReadString(c, at, "signal_name", &crash->signal_name) ||
        !ReadInt(c, at, "code", &crash->code) ||
        !ReadString(c, at, "code_name", &crash->code_name) ||
        !ReadString(c, at, "call", &crash->call) ||
        !ReadInt(c, at, "cuda_result", &crash->cuda_result) ||
        !ReadString(c, at, "cuda_error", &crash->cuda_result_name) ||
        !ReadU64(c, at, "launches_seen", &crash->launches_seen) ||
        !ReadString(c, at, "recent_kernels_note",
                    &crash->recent_kernels_note) ||
        !ReadU64(c, at, "live_blocks", &crash->live_blocks) ||
        !ReadU64(c, at, "live_bytes", &crash->live_bytes) ||
        !ReadString(c, at, "health", &crash->health_status) ||
        !ReadStrings(c, at, "skipped", &crash->skipped) ||
        !ReadStrings(c, at, "gpu_fault", &crash->gpu_fault) ||
        !ReadString(c, at, "gpu_dump_kept", &crash->gpu_dump_kept)) {
      return false;
    }
    if (Member(c, "fault_address") != nullptr) {  // null: no address
      if (!ReadAddress(c, at, "fault_address", &crash->fault_address)) {
        return false;
      }
      crash->has_fault_address = true;
    }
    if (const json* b = Member(c, "fault_block")) {  // null: in no block
      if (!ReadBlock(*b, Join(at, "fault_block"), &crash->fault_block) ||
          !ReadI64(c, at, "fault_offset", kI64Min, kI64Max,
                   &crash->fault_offset)) {
        return false;
      }
      crash->has_fault_block = true;
    } else if (Member(c, "fault_offset") != nullptr) {
      return Fail(Join(at, "fault_offset"), "given without a fault_block");
    }
    // The writer prints the signal's fields only with a signal, the CUDA
    // error's only with its call: refuse what it would drop.
    if (crash->signal == 0) {
      for (const char* key : {"signal_name", "code", "code_name",
                              "fault_address", "fault_block"}) {
        if (Member(c, key) != nullptr) {
          return Fail(Join(at, key), "given without a signal");
        }
      }
      if (Member(c, "signal") != nullptr) {
        return Fail(Join(at, "signal"), "0 is not a signal");
      }
    }
    if (crash->call.empty()) {
      for (const char* key : {"cuda_result", "cuda_error"}) {
        if (Member(c, key) != nullptr) {
          return Fail(Join(at, key), "given without the call");
        }
      }
    }
    const json* kernels = nullptr;
    if (!ReadArray(c, at, "recent_kernels", &kernels)) return false;
    if (kernels != nullptr) {
      for (size_t i = 0; i < kernels->size(); ++i) {
        const json& k = (*kernels)[i];
        const std::string here = Index(Join(at, "recent_kernels"), i);
        ReportData::Crash::Launch launch;
        if (!RequireObject(k, here) ||
            !ReadString(k, here, "name", &launch.name) ||
            !ReadAddress(k, here, "stream", &launch.stream) ||
            !ReadAddress(k, here, "context", &launch.context) ||
            !ReadDouble(k, here, "time_s", &launch.time_s)) {
          return false;
        }
        crash->recent_kernels.push_back(std::move(launch));
      }
    }
    const json* live = nullptr;
    if (!ReadArray(c, at, "live_allocations", &live)) return false;
    if (live != nullptr) {
      for (size_t i = 0; i < live->size(); ++i) {
        AllocationRecord block;
        if (!ReadBlock((*live)[i], Index(Join(at, "live_allocations"), i),
                       &block)) {
          return false;
        }
        crash->live.push_back(block);
      }
    }
    return true;
  }

  // ---- Reachability at exit, growth while running ----

  bool ReadReachability(const json& r, ReportData::Reachability* out) {
    const std::string at = "reachability";
    return RequireObject(r, at) && ReadBool(r, at, "ran", &out->ran) &&
           ReadDouble(r, at, "ms", &out->ms) &&
           ReadU64(r, at, "bytes_scanned", &out->bytes_scanned) &&
           ReadU64(r, at, "roots", &out->roots) &&
           ReadU64(r, at, "heap_chunks", &out->heap_chunks) &&
           ReadU64(r, at, "modules", &out->modules) &&
           ReadU64(r, at, "modules_excluded", &out->modules_excluded) &&
           ReadU64(r, at, "threads", &out->threads) &&
           ReadU64(r, at, "threads_excluded", &out->threads_excluded) &&
           ReadU64(r, at, "threads_unknown", &out->threads_unknown) &&
           ReadBool(r, at, "truncated", &out->truncated) &&
           ReadU64(r, at, "lost_bytes", &out->lost_bytes) &&
           ReadU64(r, at, "lost_blocks", &out->lost_blocks) &&
           ReadU64(r, at, "reachable_bytes", &out->reachable_bytes) &&
           ReadU64(r, at, "reachable_blocks", &out->reachable_blocks) &&
           ReadU64(r, at, "unknown_bytes", &out->unknown_bytes) &&
           ReadU64(r, at, "unknown_blocks", &out->unknown_blocks);
  }

  bool ReadGrowth(const json& g, const std::string& at,
                  ReportData::Growth* out) {
    return RequireObject(g, at) && ReadU32(g, at, "rises", &out->rises) &&
           ReadU64(g, at, "first_bytes", &out->first_bytes) &&
           ReadU64(g, at, "last_bytes", &out->last_bytes) &&
           ReadDouble(g, at, "first_s", &out->first_s) &&
           ReadDouble(g, at, "last_s", &out->last_s) &&
           ReadStackWithId(g, at, &out->stack);
  }

  // ---- NVTX ranges, memory over time ----

  bool ReadNvtxRange(const json& r, const std::string& at,
                     ReportData::NvtxRange* out) {
    return RequireObject(r, at) && ReadString(r, at, "range", &out->name) &&
           ReadU64(r, at, "allocations", &out->allocations) &&
           ReadU64(r, at, "bytes", &out->bytes) &&
           ReadU64(r, at, "live_blocks", &out->live_blocks) &&
           ReadU64(r, at, "live_bytes", &out->live_bytes);
  }

  // "timeline": {"events_recorded", "events_dropped", "capacity",
  //              "series": {"<device>": [[time_ns, live_bytes], ...]}}.
  // The events themselves are not in the JSON report.
  bool ReadTimeline(const json& t, ReportData::Timeline* out) {
    const std::string at = "timeline";
    const json* series = nullptr;
    if (!RequireObject(t, at) ||
        !ReadU64(t, at, "events_recorded", &out->recorded_events) ||
        !ReadU64(t, at, "events_dropped", &out->dropped) ||
        !ReadU64(t, at, "capacity", &out->capacity) ||
        !ReadObject(t, at, "series", &series)) {
      return false;
    }
    out->from_json = true;
    if (series == nullptr) return true;
    for (const auto& [key, points] : series->items()) {
      const std::string here = Join(Join(at, "series"), key);
      int device = 0;
      // Keys as the writer prints them ("0", "-1"), so that two keys never
      // name one device.
      if (!absl::SimpleAtoi(key, &device) || std::to_string(device) != key) {
        return Fail(here, "expected a device index as the key");
      }
      if (!points.is_array()) return Fail(here, "expected an array of points");
      std::vector<ReportData::Timeline::Point>& list = out->series[device];
      for (size_t i = 0; i < points.size(); ++i) {
        const json& p = points[i];
        const std::string point = Index(here, i);
        ReportData::Timeline::Point value;
        if (!p.is_array() || p.size() != 2) {
          return Fail(point, "expected [time_ns, live_bytes]");
        }
        if (!I64Value(p[0], Index(point, 0), kI64Min, kI64Max,
                      &value.time_ns) ||
            !U64Value(p[1], Index(point, 1), &value.live_bytes)) {
          return false;
        }
        list.push_back(value);
      }
    }
    return true;
  }

  ReportData* data_;
  StackId next_stack_ = kNoStack;
  absl::flat_hash_set<StackId> reserved_;
  // Stacks named by id: where first seen, and their frames.
  absl::flat_hash_map<StackId,
                      std::pair<std::string, std::vector<SymbolizedFrame>>>
      named_stacks_;
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
  ReserveNamedStacks(doc);
  if (!ReadString(doc, "", "version", &d.version) ||
      !ReadInt(doc, "", "pid", &d.pid) ||
      !ReadStrings(doc, "", "argv", &d.argv) ||
      !ReadString(doc, "", "reason", &d.reason)) {
    return false;
  }

  const json* devices = nullptr;
  if (!ReadArray(doc, "", "devices", &devices)) return false;
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
  // summary.leak_sites is the length of "leaks": recomputed, not read.
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
  if (!ReadArray(doc, "", "leaks", &leaks)) return false;
  if (leaks != nullptr) {
    for (size_t i = 0; i < leaks->size(); ++i) {
      ReportData::Leak leak;
      if (!ReadLeak((*leaks)[i], Index("leaks", i), &leak)) return false;
      d.leaks.push_back(std::move(leak));
    }
  }
  const json* errors = nullptr;
  if (!ReadArray(doc, "", "errors", &errors)) return false;
  if (errors != nullptr) {
    for (size_t i = 0; i < errors->size(); ++i) {
      ErrorRecord error;
      if (!ReadError((*errors)[i], Index("errors", i), &error)) return false;
      d.errors.push_back(std::move(error));
    }
  }
  if (!ReadU64(doc, "", "errors_dropped", &d.errors_dropped) ||
      !ReadThreadOsIds(doc)) {
    return false;
  }
  const json* suppressions = nullptr;
  if (!ReadArray(doc, "", "suppressions", &suppressions)) return false;
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
        !ReadU64(*g, at, "unguarded_refused", &guard.unguarded_refused) ||
        !ReadU64(*g, at, "unguarded_shareable", &guard.unguarded_shareable) ||
        !ReadU64(*g, at, "checks", &guard.checks) ||
        !ReadU64(*g, at, "check_failures", &guard.check_failures) ||
        !ReadU64(*g, at, "fill_failures", &guard.fill_failures) ||
        !ReadU64(*g, at, "bytes_checked", &guard.bytes_checked) ||
        !ReadU64(*g, at, "quarantine_bytes", &guard.quarantine_bytes) ||
        !ReadU64(*g, at, "evicted", &guard.evicted)) {
      return false;
    }
    // Absent from reports written before blocks were reused (and before
    // they were taken in flight).
    if (Member(*g, "reused") != nullptr &&
        !ReadU64(*g, at, "reused", &guard.reused)) {
      return false;
    }
    if (Member(*g, "reused_in_flight") != nullptr &&
        !ReadU64(*g, at, "reused_in_flight", &guard.reused_in_flight)) {
      return false;
    }
  }
  if (const json* t = Member(doc, "timeline")) {
    if (!ReadTimeline(*t, &d.timeline)) return false;
  }
  if (const json* r = Member(doc, "reachability")) {
    if (!ReadReachability(*r, &d.reachability)) return false;
  }
  if (!ReadU64(doc, "", "growth_samples", &d.growth_samples)) return false;
  const json* growth = nullptr;
  if (!ReadArray(doc, "", "growth", &growth)) return false;
  if (growth != nullptr) {
    for (size_t i = 0; i < growth->size(); ++i) {
      ReportData::Growth g;
      if (!ReadGrowth((*growth)[i], Index("growth", i), &g)) return false;
      d.growth.push_back(g);
    }
  }
  if (const json* h = Member(doc, "health")) {
    if (!ReadHealth(*h, &d.health)) return false;
    d.health_read = true;
  }
  if (const json* c = Member(doc, "crash")) {
    if (!ReadCrash(*c, &d.crash)) return false;
  }
  const json* ranges = nullptr;
  if (!ReadArray(doc, "", "nvtx_ranges", &ranges)) return false;
  if (ranges != nullptr) {
    for (size_t i = 0; i < ranges->size(); ++i) {
      ReportData::NvtxRange range;
      if (!ReadNvtxRange((*ranges)[i], Index("nvtx_ranges", i), &range)) {
        return false;
      }
      d.nvtx_ranges.push_back(std::move(range));
    }
  }
  if (const json* m = Member(doc, "nvtx_mem")) {
    if (!ReadNvtxMem(*m, &d.nvtx_mem)) return false;
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
