// include/gmt/gmt.h, implemented on the engine.
#define GMT_BUILDING_LIBRARY 1
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "gmt/gmt.h"
#include "lib/core/clock.h"
#include "lib/engine/engine.h"
#include "lib/report/snapshot_diff.h"

namespace gmt {
namespace {

Frame ToFrame(const SymbolizedFrame& f) {
  Frame out;
  out.address = f.address;
  out.function = f.function;
  out.file = f.file;
  out.line = f.line;
  out.module = f.module;
  return out;
}

// A malloc'd copy of `text` for the C API (released with gmt_free()).
char* MallocCopy(const std::string& text) {
  char* result = static_cast<char*>(std::malloc(text.size() + 1));
  if (result == nullptr) return nullptr;
  std::memcpy(result, text.c_str(), text.size() + 1);
  return result;
}

}  // namespace

Snapshot snapshot() {
  Snapshot snap;
  Engine* engine = Engine::IfCreated();
  if (engine == nullptr) engine = &Engine::Get();
  snap.active = engine->tracking();
  if (!snap.active) return snap;
  // The snapshot is a check point too (DESIGN §3).
  engine->CheckAllZones("snapshot");
  std::vector<AllocationRecord> live = engine->LiveAllocations();
  std::vector<StackId> ids;
  ids.reserve(live.size());
  for (const AllocationRecord& r : live) ids.push_back(r.stack);
  StackTable stacks;
  engine->SymbolizeInto(ids, &stacks);
  snap.allocations.reserve(live.size());
  for (const AllocationRecord& r : live) {
    Allocation a;
    a.address = r.address;
    a.bytes = r.bytes;
    a.device = r.device;
    a.api = std::string(ApiName(r.api));
    a.kind = std::string(MemoryKindName(r.kind));
    a.stream = r.stream;
    a.thread = r.thread;
    a.time_s = static_cast<double>(SinceStartNs(r.time_ns)) * 1e-9;
    if (auto it = stacks.find(r.stack); it != stacks.end()) {
      for (const SymbolizedFrame& f : it->second) a.stack.push_back(ToFrame(f));
    }
    snap.allocations.push_back(std::move(a));
  }
  for (int d = 0; d < Usage::kMaxDevices; ++d) {
    UsageFigures u = engine->DeviceUsage(d);
    if (u.allocations == 0) continue;
    snap.devices.push_back(
        {d, u.live_bytes, u.peak_bytes, u.allocations, u.frees});
  }
  UsageFigures host = engine->DeviceUsage(kHostDevice);
  if (host.allocations > 0) {
    snap.devices.push_back(
        {-1, host.live_bytes, host.peak_bytes, host.allocations, host.frees});
  }
  for (const DeviceUsage& d : snap.devices) {
    snap.live_bytes += d.live_bytes;
    snap.peak_bytes += d.peak_bytes;
  }
  snap.errors = engine->ErrorCount();
  return snap;
}

SnapshotDiff diff(const Snapshot& before, const Snapshot& after) {
  return DiffSnapshots(before, after);
}

std::string diff_text(const SnapshotDiff& d) {
  return RenderDiffText(d, static_cast<int>(getpid()));
}

uint64_t check_now() {
  Engine& engine = Engine::Get();
  if (!engine.tracking()) return 0;
  engine.CheckAllZones("request");
  return engine.ErrorCount();
}

uint64_t report() {
  Engine& engine = Engine::Get();
  if (!engine.tracking()) return 0;
  engine.CheckAllZones("request");
  engine.WriteReport("request");
  return engine.ErrorCount();
}

}  // namespace gmt

extern "C" {

char* gmt_snapshot_json(void) {
  using nlohmann::json;
  json doc = gmt::SnapshotToJson(gmt::snapshot());
  return gmt::MallocCopy(
      doc.dump(-1, ' ', false, json::error_handler_t::replace));
}

char* gmt_diff_json(const char* before_json, const char* after_json) {
  return gmt::MallocCopy(gmt::DiffJsonText(before_json, after_json));
}

void gmt_free(void* p) { std::free(p); }

uint64_t gmt_report(void) { return gmt::report(); }

uint64_t gmt_check_now(void) { return gmt::check_now(); }

size_t gmt_live_bytes(int device) {
  gmt::Engine* engine = gmt::Engine::IfCreated();
  if (engine == nullptr) return 0;
  if (device >= -1) return engine->DeviceUsage(device).live_bytes;
  size_t total = engine->DeviceUsage(gmt::kHostDevice).live_bytes;
  for (int d = 0; d < gmt::Usage::kMaxDevices; ++d) {
    total += engine->DeviceUsage(d).live_bytes;
  }
  return total;
}

int gmt_active(void) {
  gmt::Engine* engine = gmt::Engine::IfCreated();
  return engine != nullptr ? engine->tracking() : gmt::GlobalOptions().enabled;
}

}  // extern "C"
