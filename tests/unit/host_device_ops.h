// A DeviceOps over host memory for the engine's unit tests: "device"
// addresses are host pointers, every operation runs at once (unless
// `deferred`: then an asynchronous check runs when the test says the GPU got
// to it, or when something waits for it), and each call is counted so tests
// can assert what the guard manager asked for, host waits included.
#ifndef GMT_TESTS_UNIT_HOST_DEVICE_OPS_H_
#define GMT_TESTS_UNIT_HOST_DEVICE_OPS_H_

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "lib/guard/device_ops.h"

namespace gmt {

class HostDeviceOps : public DeviceOps {
 public:
  int fills = 0;  // Fill calls
  int zones_filled = 0;
  // Checks on the tool's stream (stream 0: the engine waits for their
  // answer), and checks on a program's stream (per kernel, at a
  // stream-ordered free: answered later).
  int checks = 0;
  int async_checks = 0;
  size_t last_async_zones = 0;    // zones of the latest program-stream check
  size_t last_tool_zones = 0;     // zones of the latest tool-stream check
  uint64_t last_async_bytes = 0;  // the bytes of those zones
  size_t max_check_zones = 0;     // zones of the largest program-stream check
  int orders = 0;                 // OrderAfterFills calls
  int syncs = 0;
  // Host waits for a check's answer: PollCheck with `wait`, Check.
  int waits = 0;
  std::vector<uint64_t> released;  // raw addresses given back
  // Blocks "CUDA" handed out (the test adds them) and not yet released;
  // releasing anything else is refused, as CUDA refuses it, and counted.
  std::set<uint64_t> device_blocks;
  int invalid_releases = 0;
  int sync_result = 0;  // what SynchronizeContext answers
  bool capturing = false;
  bool fail_checks = false;
  // Asynchronous checks stay pending until RunChecks, a SynchronizeContext
  // or a PollCheck that waits; they compare the zones when they "run".
  bool deferred = false;

  // The GPU gets to every asynchronous check enqueued so far.
  void RunChecks() {
    for (auto& [ticket, t] : tickets_) Run(&t);
  }
  size_t checks_in_flight() const {
    size_t n = 0;
    for (const auto& [ticket, t] : tickets_) n += t.ran ? 0 : 1;
    return n;
  }
  // Per-kernel checks (CheckAfterKernel): how many, and whether the caller
  // vouched for the current context at the latest.
  int kernel_checks = 0;
  bool last_context_current = false;
  // A program-stream check that finds a changed zone answers kLost (its
  // findings overwritten before they were read).
  bool lose_findings = false;

  bool Fill(uint64_t, uint64_t, absl::Span<const GmtZone> zones) override {
    ++fills;
    for (const GmtZone& z : zones) {
      std::memset(reinterpret_cast<void*>(z.address),
                  static_cast<int>(z.pattern & 0xFF), z.bytes);
      ++zones_filled;
    }
    return true;
  }
  bool OrderAfterFills(uint64_t, uint64_t) override {
    ++orders;
    return true;
  }
  bool Check(uint64_t, uint64_t, absl::Span<const GmtZone> zones,
             std::vector<GmtZoneResult>* results) override {
    ++checks;
    ++waits;
    if (fail_checks) return false;
    *results = Compare(zones);
    return true;
  }
  uint64_t CheckAsync(uint64_t, uint64_t stream,
                      absl::Span<const GmtZone> zones) override {
    ++(stream == 0 ? checks : async_checks);
    if (stream == 0) last_tool_zones = zones.size();
    if (stream != 0) {
      last_async_zones = zones.size();
      max_check_zones = std::max(max_check_zones, zones.size());
      last_async_bytes = 0;
      for (const GmtZone& z : zones) last_async_bytes += z.bytes;
    }
    if (fail_checks) return 0;
    uint64_t ticket = next_ticket_++;
    Ticket& t = tickets_[ticket];
    t.zones.assign(zones.begin(), zones.end());
    if (!deferred) Run(&t);
    return ticket;
  }
  uint64_t CheckAfterKernel(uint64_t context, uint64_t stream,
                            absl::Span<const GmtZone> zones,
                            bool context_current) override {
    ++kernel_checks;
    last_context_current = context_current;
    const uint64_t ticket = CheckAsync(context, stream, zones);
    if (ticket != 0 && lose_findings) {
      Ticket& t = tickets_[ticket];
      Run(&t);
      for (const GmtZoneResult& r : t.results) {
        if (r.changed_bytes != 0) lost_.push_back(ticket);
      }
    }
    return ticket;
  }
  // A fill with a check riding on it (DeviceOps::CheckAndFill): counted,
  // with the zones of the latest check, then made as the default makes it
  // (it counts among fills and async_checks too). `overlaps`: calls whose
  // check and fill shared a byte, which the contract forbids.
  int check_fills = 0;
  int overlaps = 0;
  uint64_t CheckAndFill(uint64_t context, uint64_t stream,
                        absl::Span<const GmtZone> check,
                        absl::Span<const GmtZone> fill, bool* filled) override {
    ++check_fills;
    for (const GmtZone& c : check) {
      for (const GmtZone& f : fill) {
        if (c.bytes != 0 && f.bytes != 0 && c.address < f.address + f.bytes &&
            f.address < c.address + c.bytes) {
          ++overlaps;
        }
      }
    }
    return DeviceOps::CheckAndFill(context, stream, check, fill, filled);
  }
  Poll PollCheck(uint64_t ticket, bool wait,
                 std::vector<GmtZoneResult>* results) override {
    auto it = tickets_.find(ticket);
    if (it == tickets_.end()) return Poll::kFailed;
    if (wait) ++waits;
    if (std::find(lost_.begin(), lost_.end(), ticket) != lost_.end()) {
      tickets_.erase(it);
      return Poll::kLost;
    }
    if (!it->second.ran) {
      if (!wait) return Poll::kPending;
      Run(&it->second);
    }
    *results = it->second.results;
    tickets_.erase(it);
    return Poll::kDone;
  }
  int SynchronizeContext(uint64_t) override {
    ++syncs;
    RunChecks();  // a synchronization waits for all work, the tool's too
    return sync_result;
  }
  int Release(Api, uint64_t, uint64_t raw) override {
    RunChecks();  // CUDA's free synchronizes the device
    if (device_blocks.erase(raw) == 0) {
      ++invalid_releases;
      return 1;  // cudaErrorInvalidValue
    }
    released.push_back(raw);
    std::free(reinterpret_cast<void*>(raw));
    return 0;
  }
  // Stream-ordered frees: the block goes back to "CUDA" at once (in stream
  // order nothing can run between the check enqueued before it and the
  // free); counted apart from synchronous releases, with the stream each
  // went on (0: the tool's).
  std::vector<uint64_t> released_ordered;
  std::vector<uint64_t> released_ordered_streams;
  int ReleaseOrdered(uint64_t, uint64_t raw, uint64_t stream) override {
    RunChecks();  // enqueued before the free: they run before it
    if (device_blocks.erase(raw) == 0) {
      ++invalid_releases;
      return 1;  // cudaErrorInvalidValue
    }
    released_ordered.push_back(raw);
    released_ordered_streams.push_back(stream);
    std::free(reinterpret_cast<void*>(raw));
    return 0;
  }
  bool Read(uint64_t, uint64_t address, void* out, uint64_t bytes) override {
    std::memcpy(out, reinterpret_cast<const void*>(address), bytes);
    return true;
  }
  bool Write(uint64_t, uint64_t address, const void* data,
             uint64_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(address), data, bytes);
    return true;
  }
  bool StreamCapturing(uint64_t) override { return capturing; }
  void ForgetContext(uint64_t) override {}

 private:
  static std::vector<GmtZoneResult> Compare(absl::Span<const GmtZone> zones) {
    std::vector<GmtZoneResult> out(zones.size());
    for (size_t i = 0; i < zones.size(); ++i) {
      const auto* p = reinterpret_cast<const uint8_t*>(zones[i].address);
      for (uint64_t off = 0; off < zones[i].bytes; ++off) {
        if (p[off] == (zones[i].pattern & 0xFF)) continue;
        GmtZoneResult& r = out[i];
        ++r.changed_bytes;
        if (~off > r.first_inverted) r.first_inverted = ~off;
        if (off + 1 > r.last_plus1) r.last_plus1 = off + 1;
      }
    }
    return out;
  }

  struct Ticket {
    std::vector<GmtZone> zones;
    std::vector<GmtZoneResult> results;
    bool ran = false;
  };
  static void Run(Ticket* t) {
    if (t->ran) return;
    t->results = Compare(t->zones);
    t->ran = true;
  }

  uint64_t next_ticket_ = 1;
  std::vector<uint64_t> lost_;
  std::map<uint64_t, Ticket> tickets_;
};

}  // namespace gmt

#endif  // GMT_TESTS_UNIT_HOST_DEVICE_OPS_H_
