#include "tests/kernels/zone_scenarios.h"

#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "kernels/zone_kernels_image.h"
#include "lib/core/api.h"

namespace gmt_test {
namespace {

using gmt::DeviceOps;
constexpr uint64_t kChunk = GMT_ZONE_CHUNK_BYTES;

std::string Where(const char* file, int line) {
  const char* base = file;
  for (const char* p = file; *p != '\0'; ++p) {
    if (*p == '/') base = p + 1;
  }
  return std::string(base) + ":" + std::to_string(line) + ": ";
}

#define SC_CHECK(sc, cond)                                                \
  do {                                                                    \
    if (!(cond)) (sc).Fail(Where(__FILE__, __LINE__) + "failed: " #cond); \
  } while (0)

#define SC_CHECK_EQ(sc, a, b)                                          \
  do {                                                                 \
    const auto sc_a = (a);                                             \
    const auto sc_b = (b);                                             \
    if (!(sc_a == sc_b)) {                                             \
      std::ostringstream sc_out;                                       \
      sc_out << Where(__FILE__, __LINE__) << #a " == " #b ": " << sc_a \
             << " vs " << sc_b;                                        \
      (sc).Fail(sc_out.str());                                         \
    }                                                                  \
  } while (0)

std::string Describe(const GmtZoneResult& r) {
  if (r.changed_bytes == 0 && r.first_inverted == 0 && r.last_plus1 == 0) {
    return "clean";
  }
  std::ostringstream out;
  out << r.changed_bytes << " changed, first " << ~r.first_inverted << ", last "
      << (r.last_plus1 - 1);
  if (r.reserved != 0) out << ", reserved " << r.reserved;
  return out.str();
}

bool SameResult(const GmtZoneResult& a, const GmtZoneResult& b) {
  return a.changed_bytes == b.changed_bytes &&
         a.first_inverted == b.first_inverted && a.last_plus1 == b.last_plus1 &&
         a.reserved == b.reserved;
}

// Compares per zone; reports at most a few differing zones.
void CompareResults(ScenarioContext& sc, const std::string& what,
                    const std::vector<GmtZoneResult>& got,
                    const std::vector<GmtZoneResult>& want) {
  if (got.size() != want.size()) {
    sc.Fail(what + ": " + std::to_string(got.size()) + " results for " +
            std::to_string(want.size()) + " zones");
    return;
  }
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    if (SameResult(got[i], want[i])) continue;
    sc.Fail(what + ": zone " + std::to_string(i) + ": got " + Describe(got[i]) +
            ", want " + Describe(want[i]));
    ++reported;
  }
}

std::vector<GmtZoneResult> Clean(size_t n) {
  return std::vector<GmtZoneResult>(n, GmtZoneResult{});
}

// Applies writes through DeviceOps::Write (the tool's stream, after fills).
void ApplyWrites(ScenarioContext& sc, const std::vector<Write>& writes) {
  for (const Write& w : writes) {
    if (!sc.ops().Write(sc.context(), w.address, w.bytes.data(),
                        w.bytes.size())) {
      sc.Fail("DeviceOps::Write at offset failed");
    }
  }
}

std::vector<GmtZoneResult> CheckNow(ScenarioContext& sc, uint64_t stream,
                                    const std::vector<GmtZone>& zones) {
  std::vector<GmtZoneResult> results;
  if (!sc.ops().Check(sc.context(), stream, zones, &results)) {
    sc.Fail("DeviceOps::Check failed");
  }
  return results;
}

// ---- Scenarios
// ------------------------------------------------------------------

// Hand-picked corruptions: head, middle, unaligned tail, across a 16-byte
// boundary, in a zone of several chunks, a zero-length zone, and writes just
// outside zones that must not count.
void ExactOffsets(ScenarioContext& sc) {
  const uint64_t b = sc.Alloc(4 * kChunk + 8192);
  if (b == 0) return;
  const std::vector<GmtZone> zones = {
      {b, 256, 0xa5, 0},                        // aligned front redzone
      {b + 1256, 4103, 0x5a, 0},                // unaligned both ends
      {b + 8192, 2 * kChunk + 333, 0xfe, 0},    // three chunks
      {b + 139664, 0, 0x00, 0},                 // zero length
      {b + 139683, 5000, 0x00, 0},              // middle writes
      {b + 150000, 100, 0xc3, 0},               // stays clean
      {b + 4 * kChunk + 8192 - 7, 7, 0x77, 0},  // the block's last bytes
  };
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, zones));
  CompareResults(sc, "after fill", CheckNow(sc, 0, zones), Clean(zones.size()));

  const std::vector<Write> writes = {
      {b + 0, {0x00}},                                // zone 0, offset 0
      {b + 1255, {0x01}},                             // just before zone 1
      {b + 1256 + 3, {0x00}},                         // zone 1, unaligned head
      {b + 1256 + 4102, {0x01}},                      // zone 1, last byte
      {b + 1256 + 4103, {0x02}},                      // just after zone 1
      {b + 8192 + kChunk + 14, {1, 2, 3, 4}},         // across 16 B, chunk 2
      {b + 8192 + 2 * kChunk + 332, {0}},             // zone 2, last byte
      {b + 139664, {0x42}},                           // at the empty zone
      {b + 139683 + 2500, {0x00, 0x07, 0x00, 0x09}},  // two equal the pattern
      {b + 4 * kChunk + 8192 - 1, {0x78}},            // zone 6, last byte
  };
  ApplyWrites(sc, writes);
  const std::vector<GmtZoneResult> want = ExpectedResults(zones, writes);
  SC_CHECK_EQ(sc, want[0].changed_bytes, 1u);  // the model itself
  SC_CHECK_EQ(sc, want[1].changed_bytes, 2u);
  SC_CHECK_EQ(sc, want[2].changed_bytes, 5u);
  SC_CHECK_EQ(sc, ~want[2].first_inverted, kChunk + 14);
  SC_CHECK_EQ(sc, want[4].changed_bytes, 2u);
  CompareResults(sc, "after writes", CheckNow(sc, 0, zones), want);

  // The program's byte values are back: a clean check after the next fill.
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, zones));
  CompareResults(sc, "after re-fill", CheckNow(sc, 0, zones),
                 Clean(zones.size()));
}

// Many zones (more than a slot's first capacity), random sizes, alignments,
// patterns and writes; chunk_begin given wrong on purpose (DeviceOps must
// recompute it).
void RandomZones(ScenarioContext& sc) {
  std::mt19937_64 rng(20240611);
  auto uniform = [&rng](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  constexpr uint64_t kBlock = 24u << 20;
  const uint64_t b = sc.Alloc(kBlock);
  if (b == 0) return;
  std::vector<GmtZone> zones;
  uint64_t at = b + uniform(0, 31);
  while (zones.size() < 300) {
    uint64_t bytes = 0;
    switch (uniform(0, 9)) {
      case 0:
        bytes = 0;
        break;
      case 1:
        bytes = uniform(1, 17);
        break;
      case 2:
        bytes = uniform(2 * kChunk, 3 * kChunk + 100);
        break;
      case 3:
        bytes = kChunk * uniform(1, 2);
        break;
      default:
        bytes = uniform(18, 6000);
        break;
    }
    if (at + bytes > b + kBlock) break;
    zones.push_back({at, bytes, uniform(0, 255), 12345});
    at += bytes + uniform(0, 300);
  }
  SC_CHECK(sc, zones.size() > 256);
  std::vector<Write> writes;
  for (int i = 0; i < 200; ++i) {
    const GmtZone& z = zones[uniform(0, zones.size() - 1)];
    if (z.bytes == 0) continue;
    const uint64_t offset = uniform(0, z.bytes - 1);
    const uint64_t n = std::min<uint64_t>(uniform(1, 40), z.bytes - offset);
    Write w{z.address + offset, {}};
    for (uint64_t k = 0; k < n; ++k) {
      // One in four bytes keeps the pattern: written, but not changed.
      w.bytes.push_back(uniform(0, 3) == 0
                            ? static_cast<uint8_t>(z.pattern)
                            : static_cast<uint8_t>(uniform(0, 255)));
    }
    writes.push_back(std::move(w));
  }
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, zones));
  CompareResults(sc, "random, after fill", CheckNow(sc, 0, zones),
                 Clean(zones.size()));
  ApplyWrites(sc, writes);
  CompareResults(sc, "random, after writes", CheckNow(sc, 0, zones),
                 ExpectedResults(zones, writes));
}

// CheckAsync on the program's stream and on the tool's, then PollCheck.
void AsyncChecks(ScenarioContext& sc) {
  const uint64_t b = sc.Alloc(3 * kChunk);
  if (b == 0) return;
  const std::vector<GmtZone> zones = {{b + 5, 1000, 0x11, 0},
                                      {b + 2048, 2 * kChunk, 0x22, 0}};
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, zones));
  const std::vector<Write> writes = {{b + 5 + 999, {0}},
                                     {b + 2048 + kChunk + 7, {1, 2, 3}}};
  ApplyWrites(sc, writes);
  const auto want = ExpectedResults(zones, writes);

  CUstream stream = nullptr;
  if (sc.driver().stream_create(&stream, CU_STREAM_NON_BLOCKING) !=
      CUDA_SUCCESS) {
    sc.Fail("cuStreamCreate failed");
    return;
  }
  const uint64_t program = sc.ops().CheckAsync(
      sc.context(), reinterpret_cast<uint64_t>(stream), zones);
  const uint64_t tool = sc.ops().CheckAsync(sc.context(), 0, zones);
  SC_CHECK(sc, program != 0);
  SC_CHECK(sc, tool != 0 && tool != program);

  std::vector<GmtZoneResult> results;
  DeviceOps::Poll poll = DeviceOps::Poll::kPending;
  for (int i = 0; i < 1000 && poll == DeviceOps::Poll::kPending; ++i) {
    poll = sc.ops().PollCheck(program, /*wait=*/false, &results);
  }
  if (poll == DeviceOps::Poll::kPending) {
    poll = sc.ops().PollCheck(program, /*wait=*/true, &results);
  }
  SC_CHECK(sc, poll == DeviceOps::Poll::kDone);
  CompareResults(sc, "async on program stream", results, want);
  SC_CHECK(sc, sc.ops().PollCheck(program, true, &results) ==
                   DeviceOps::Poll::kFailed);  // answered: forgotten

  results.clear();
  SC_CHECK(sc, sc.ops().PollCheck(tool, /*wait=*/true, &results) ==
                   DeviceOps::Poll::kDone);
  CompareResults(sc, "async on tool stream", results, want);
  SC_CHECK(sc, sc.ops().PollCheck(987654321, true, &results) ==
                   DeviceOps::Poll::kFailed);

  // More bytes than one block of the inline check covers: several blocks,
  // their answers merged, on both streams.
  const uint64_t big = sc.Alloc(16 * kChunk);
  if (big == 0) return;
  const std::vector<GmtZone> wide = {{big + 3, 15 * kChunk + 9, 0x44, 0},
                                     {big + 15 * kChunk + 100, 4000, 0x45, 0}};
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, wide));
  const std::vector<Write> wide_writes = {
      {big + 3, {0}},
      {big + 3 + 5 * kChunk + 17, {0, 0}},
      {big + 3 + 15 * kChunk + 8, {0}},
      {big + 15 * kChunk + 100 + 3999, {0}}};
  ApplyWrites(sc, wide_writes);
  const auto wide_want = ExpectedResults(wide, wide_writes);
  for (uint64_t on : {uint64_t{0}, reinterpret_cast<uint64_t>(stream)}) {
    const uint64_t ticket = sc.ops().CheckAsync(sc.context(), on, wide);
    SC_CHECK(sc, ticket != 0);
    results.clear();
    SC_CHECK(sc, sc.ops().PollCheck(ticket, /*wait=*/true, &results) ==
                     DeviceOps::Poll::kDone);
    CompareResults(sc,
                   on == 0 ? "960 KiB on the tool stream"
                           : "960 KiB on the program stream",
                   results, wide_want);
  }
  sc.driver().stream_synchronize(stream);
  sc.driver().stream_destroy(stream);
}

// Fill and check on a program stream, ordered after the tool's fills.
void ProgramStream(ScenarioContext& sc) {
  const uint64_t b = sc.Alloc(kChunk);
  if (b == 0) return;
  CUstream stream = nullptr;
  if (sc.driver().stream_create(&stream, CU_STREAM_DEFAULT) != CUDA_SUCCESS) {
    sc.Fail("cuStreamCreate failed");
    return;
  }
  const uint64_t s = reinterpret_cast<uint64_t>(stream);
  const std::vector<GmtZone> tool_zones = {{b, 512, 0x31, 0}};
  // Two zones and an empty one (memsets), odd starts and lengths; then four
  // (one launch of the inline fill).
  const std::vector<GmtZone> program_zones = {{b + 600, 3001, 0x32, 0},
                                              {b + 3700, 0, 0x33, 0},
                                              {b + 3701, 20011, 0x34, 0}};
  const std::vector<GmtZone> four_zones = {{b + 30001, 17, 0x35, 0},
                                           {b + 30100, 4096, 0x36, 0},
                                           {b + 40000, 511, 0x37, 0},
                                           {b + 50001, 33, 0x38, 0}};
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, tool_zones));
  SC_CHECK(sc, sc.ops().OrderAfterFills(sc.context(), s));
  SC_CHECK(sc, sc.ops().OrderAfterFills(sc.context(), 0));
  SC_CHECK(sc, sc.ops().Fill(sc.context(), s, program_zones));
  SC_CHECK(sc, sc.ops().Fill(sc.context(), s, four_zones));
  // The program stream's check waits for the tool's fill first.
  CompareResults(sc, "program stream, tool zones", CheckNow(sc, s, tool_zones),
                 Clean(1));
  CompareResults(sc, "program stream, own zones",
                 CheckNow(sc, s, program_zones), Clean(program_zones.size()));
  CompareResults(sc, "program stream, four zones", CheckNow(sc, s, four_zones),
                 Clean(four_zones.size()));
  const std::vector<Write> writes = {{b + 600 + 1500, {0, 0, 0}}};
  ApplyWrites(sc, writes);
  CompareResults(sc, "program stream, after writes",
                 CheckNow(sc, s, program_zones),
                 ExpectedResults(program_zones, writes));
  sc.driver().stream_synchronize(stream);
  sc.driver().stream_destroy(stream);
}

// A check and a fill due on one program stream at once (blocks leaving the
// quarantine, new blocks before the next kernel): one launch on the driver,
// whose check blocks answer what the writes changed, one block's worth and
// several blocks' (their answers merged), and whose fill blocks write the
// new zones, large ones across chunks, while the checked zones stay as they
// were.
void CheckAndFill(ScenarioContext& sc) {
  const uint64_t b = sc.Alloc(8 * kChunk);
  if (b == 0) return;
  CUstream stream = nullptr;
  if (sc.driver().stream_create(&stream, CU_STREAM_NON_BLOCKING) !=
      CUDA_SUCCESS) {
    sc.Fail("cuStreamCreate failed");
    return;
  }
  const uint64_t s = reinterpret_cast<uint64_t>(stream);
  // Checked: a freed block's canaries and bytes (the second time more bytes
  // than one check block covers). Filled: a new block's canaries, and a
  // freed block's 3 chunks of bytes.
  for (uint64_t freed_bytes : {uint64_t{20011}, 3 * kChunk + 77}) {
    const std::vector<GmtZone> checked = {
        {b + 3, 509, 0xa5, 0},
        {b + 512, freed_bytes, 0xf7, 0},
        {b + 512 + freed_bytes, 301, 0xa5, 0}};
    const uint64_t n = b + 5 * kChunk;
    const std::vector<GmtZone> filled = {{n + 1, 511, 0xa5, 0},
                                         {n + 512, 0, 0x5a, 0},
                                         {n + 1024, 3 * kChunk - 2048, 0xf7, 0},
                                         {n + 3 * kChunk - 1000, 900, 0xa5, 0}};
    SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, checked));
    SC_CHECK(sc, sc.ops().OrderAfterFills(sc.context(), s));
    const std::vector<Write> writes = {{b + 3 + 508, {0}},
                                       {b + 512 + freed_bytes - 2, {1, 2}},
                                       {b + 512 + freed_bytes + 300, {9}}};
    ApplyWrites(sc, writes);
    SC_CHECK(sc, sc.ops().OrderAfterFills(sc.context(), s));
    bool ok = false;
    const uint64_t ticket =
        sc.ops().CheckAndFill(sc.context(), s, checked, filled, &ok);
    SC_CHECK(sc, ok);
    SC_CHECK(sc, ticket != 0);
    std::vector<GmtZoneResult> results;
    SC_CHECK(sc, sc.ops().PollCheck(ticket, /*wait=*/true, &results) ==
                     DeviceOps::Poll::kDone);
    const std::string what =
        "check of " + std::to_string(freed_bytes) + " freed bytes with a fill";
    CompareResults(sc, what, results, ExpectedResults(checked, writes));
    CompareResults(sc, what + ", the fill", CheckNow(sc, s, filled),
                   Clean(filled.size()));
    CompareResults(sc, what + ", the checked zones after",
                   CheckNow(sc, s, checked), ExpectedResults(checked, writes));
  }
  sc.driver().stream_synchronize(stream);
  sc.driver().stream_destroy(stream);
}

void ReadAndWrite(ScenarioContext& sc) {
  const uint64_t b = sc.Alloc(4096);
  if (b == 0) return;
  std::vector<uint8_t> data(37);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 7);
  SC_CHECK(sc, sc.ops().Write(sc.context(), b + 3, data.data(), data.size()));
  std::vector<uint8_t> back(data.size() + 2, 0xee);
  SC_CHECK(sc, sc.ops().Read(sc.context(), b + 2, back.data(), back.size()));
  SC_CHECK_EQ(sc, static_cast<int>(back[0]), 0);  // Alloc zero-fills
  SC_CHECK(sc, std::equal(data.begin(), data.end(), back.begin() + 1));
  SC_CHECK_EQ(sc, static_cast<int>(back.back()), 0);
  SC_CHECK(sc, sc.ops().Read(sc.context(), b, back.data(), 0));
  // A write after a fill lands after it (both on the tool's stream).
  const std::vector<GmtZone> zones = {{b + 1024, 1024, 0x99, 0}};
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, zones));
  const uint8_t header[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  SC_CHECK(sc, sc.ops().Write(sc.context(), b + 1024, header, sizeof(header)));
  uint8_t got[10] = {};
  SC_CHECK(sc, sc.ops().Read(sc.context(), b + 1024, got, sizeof(got)));
  SC_CHECK(sc, std::equal(header, header + 8, got));
  SC_CHECK_EQ(sc, static_cast<int>(got[8]), 0x99);
}

void Release(ScenarioContext& sc) {
  TestDriver& d = sc.driver();
  CUdeviceptr driver_block = 0, runtime_block = 0;
  void* pinned = nullptr;
  if (d.mem_alloc(&driver_block, 1000) != CUDA_SUCCESS ||
      d.mem_alloc(&runtime_block, 1000) != CUDA_SUCCESS ||
      d.mem_host_alloc(&pinned, 100, 0) != CUDA_SUCCESS) {
    sc.Fail("allocation for Release failed");
    return;
  }
  SC_CHECK_EQ(
      sc, sc.ops().Release(gmt::Api::kCuMemAlloc, sc.context(), driver_block),
      0);
  // Freed already: the driver's error comes back as is.
  SC_CHECK(sc, sc.ops().Release(gmt::Api::kCuMemAlloc, sc.context(),
                                driver_block) != 0);
  // The runtime's cudaFree where the process has one, else cuMemFree.
  SC_CHECK_EQ(
      sc, sc.ops().Release(gmt::Api::kCudaMalloc, sc.context(), runtime_block),
      0);
  SC_CHECK_EQ(sc,
              sc.ops().Release(gmt::Api::kCuMemHostAlloc, sc.context(),
                               reinterpret_cast<uint64_t>(pinned)),
              0);
}

void EmptyInputs(ScenarioContext& sc) {
  const uint64_t b = sc.Alloc(256);
  if (b == 0) return;
  DeviceOps& ops = sc.ops();
  std::vector<GmtZoneResult> results(3);
  SC_CHECK(sc, ops.Fill(sc.context(), 0, {}));
  SC_CHECK(sc, ops.Check(sc.context(), 0, {}, &results));
  SC_CHECK(sc, results.empty());
  const std::vector<GmtZone> empty_zones = {{b, 0, 1, 0}, {b + 8, 0, 2, 0}};
  SC_CHECK(sc, ops.Fill(sc.context(), 0, empty_zones));
  SC_CHECK(sc, ops.Check(sc.context(), 0, empty_zones, &results));
  CompareResults(sc, "zero-length zones", results, Clean(2));
  uint64_t ticket = ops.CheckAsync(sc.context(), 0, empty_zones);
  SC_CHECK(sc, ticket != 0);
  SC_CHECK(sc,
           ops.PollCheck(ticket, false, &results) == DeviceOps::Poll::kDone);
  CompareResults(sc, "async, zero-length zones", results, Clean(2));
  ticket = ops.CheckAsync(sc.context(), 0, {});
  SC_CHECK(sc, ticket != 0);
  SC_CHECK(sc,
           ops.PollCheck(ticket, false, &results) == DeviceOps::Poll::kDone);
  SC_CHECK(sc, results.empty());
}

// The tool works in the context it is given, current or not, and leaves the
// thread's current context as it was.
void ContextNotCurrent(ScenarioContext& sc) {
  const uint64_t b = sc.Alloc(4096);
  if (b == 0) return;
  TestDriver& d = sc.driver();
  const std::vector<GmtZone> zones = {{b + 1, 3000, 0x44, 0}};
  if (d.ctx_set_current(nullptr) != CUDA_SUCCESS) {
    sc.Fail("cuCtxSetCurrent(null) failed");
    return;
  }
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, zones));
  std::vector<GmtZoneResult> results;
  SC_CHECK(sc, sc.ops().Check(sc.context(), 0, zones, &results));
  CompareResults(sc, "not current", results, Clean(1));
  // Context 0 means "the current one", and there is none.
  SC_CHECK(sc, !sc.ops().Check(0, 0, zones, &results));
  CUcontext current = reinterpret_cast<CUcontext>(1);
  SC_CHECK(sc, d.ctx_get_current(&current) == CUDA_SUCCESS);
  SC_CHECK(sc, current == nullptr);
  SC_CHECK(sc, d.ctx_set_current(d.context) == CUDA_SUCCESS);
  SC_CHECK(sc, sc.ops().Check(0, 0, zones, &results));
  CompareResults(sc, "context 0", results, Clean(1));
}

void SyncCaptureForget(ScenarioContext& sc) {
  TestDriver& d = sc.driver();
  const uint64_t b = sc.Alloc(4096);
  if (b == 0) return;
  SC_CHECK_EQ(sc, sc.ops().SynchronizeContext(sc.context()), 0);
  SC_CHECK(sc, !sc.ops().StreamCapturing(0));
  CUstream stream = nullptr;
  if (d.stream_create(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    sc.Fail("cuStreamCreate failed");
    return;
  }
  const uint64_t s = reinterpret_cast<uint64_t>(stream);
  SC_CHECK(sc, !sc.ops().StreamCapturing(s));
  if (d.stream_begin_capture != nullptr && d.stream_end_capture != nullptr) {
    SC_CHECK(sc,
             d.stream_begin_capture(
                 stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    SC_CHECK(sc, sc.ops().StreamCapturing(s));
    CUgraph graph = nullptr;
    SC_CHECK(sc, d.stream_end_capture(stream, &graph) == CUDA_SUCCESS);
    if (graph != nullptr && d.graph_destroy != nullptr) d.graph_destroy(graph);
    SC_CHECK(sc, !sc.ops().StreamCapturing(s));
  }
  d.stream_destroy(stream);

  // A forgotten context drops its tickets; the next call starts afresh.
  const std::vector<GmtZone> zones = {{b, 4096, 0x55, 0}};
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, zones));
  const uint64_t ticket = sc.ops().CheckAsync(sc.context(), 0, zones);
  SC_CHECK(sc, ticket != 0);
  SC_CHECK_EQ(sc, sc.ops().SynchronizeContext(sc.context()), 0);
  sc.ops().ForgetContext(sc.context());
  std::vector<GmtZoneResult> results;
  SC_CHECK(sc, sc.ops().PollCheck(ticket, true, &results) ==
                   DeviceOps::Poll::kFailed);
  SC_CHECK(sc, sc.ops().Check(sc.context(), 0, zones, &results));
  CompareResults(sc, "after ForgetContext", results, Clean(1));
}

// Per-kernel checks (CheckAfterKernel) on a program stream: exact results
// through the inline path (a few small zones), through the zone table (more
// zones than a launch's parameters hold, or too many bytes), and the inline
// path's own limits: a check answered after 64 later checks with findings
// has lost its findings (the ring), and says so.
std::vector<GmtZoneResult> AfterKernel(ScenarioContext& sc, uint64_t stream,
                                       const std::vector<GmtZone>& zones,
                                       DeviceOps::Poll want_poll,
                                       bool context_current = true) {
  std::vector<GmtZoneResult> results;
  const uint64_t ticket =
      sc.ops().CheckAfterKernel(sc.context(), stream, zones, context_current);
  if (ticket == 0) {
    sc.Fail("DeviceOps::CheckAfterKernel failed");
    return results;
  }
  const DeviceOps::Poll poll = sc.ops().PollCheck(ticket, true, &results);
  if (poll != want_poll) {
    sc.Fail("CheckAfterKernel answered " +
            std::to_string(static_cast<int>(poll)) + ", want " +
            std::to_string(static_cast<int>(want_poll)));
  }
  return results;
}

void KernelChecks(ScenarioContext& sc) {
  TestDriver& d = sc.driver();
  const uint64_t b = sc.Alloc(2 * kChunk + 64 * 1024);
  if (b == 0) return;
  CUstream stream = nullptr;
  if (d.stream_create(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    sc.Fail("cuStreamCreate failed");
    return;
  }
  const uint64_t s = reinterpret_cast<uint64_t>(stream);

  // A front and a tail redzone of two blocks, unaligned edges included.
  const std::vector<GmtZone> small = {{b, 512, 0xcb, 0},
                                      {b + 512 + 1000, 536, 0xcb, 0},
                                      {b + 4096, 512, 0xcb, 0},
                                      {b + 4096 + 512 + 77, 3, 0xcb, 0}};
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, small));
  CompareResults(sc, "inline, clean",
                 AfterKernel(sc, s, small, DeviceOps::Poll::kDone),
                 Clean(small.size()));
  const std::vector<Write> writes = {{b + 511, {1}},
                                     {b + 512 + 1000 + 17, {2, 3, 4, 5}},
                                     {b + 4096 + 512 + 77 + 2, {9}}};
  ApplyWrites(sc, writes);
  CompareResults(sc, "inline, overrun",
                 AfterKernel(sc, s, small, DeviceOps::Poll::kDone),
                 ExpectedResults(small, writes));
  // Context not vouched for: the same answer.
  CompareResults(sc, "inline, context made current",
                 AfterKernel(sc, s, small, DeviceOps::Poll::kDone, false),
                 ExpectedResults(small, writes));

  // 40 zones: more than one launch's parameters hold.
  std::vector<GmtZone> many;
  for (uint64_t i = 0; i < 40; ++i) {
    many.push_back(GmtZone{b + 8192 + i * 300, 100 + i, 0x5e, 0});
  }
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, many));
  const std::vector<Write> many_writes = {{b + 8192 + 39 * 300 + 5, {0}}};
  ApplyWrites(sc, many_writes);
  CompareResults(sc, "40 zones (table)",
                 AfterKernel(sc, s, many, DeviceOps::Poll::kDone),
                 ExpectedResults(many, many_writes));

  // More bytes than one block scans: two blocks, their answers merged.
  const std::vector<GmtZone> big = {{b + kChunk, kChunk + 64 * 1024, 0x6f, 0}};
  SC_CHECK(sc, sc.ops().Fill(sc.context(), 0, big));
  const std::vector<Write> big_writes = {{b + kChunk + kChunk + 3, {0}}};
  ApplyWrites(sc, big_writes);
  CompareResults(sc, "320 KiB (two blocks)",
                 AfterKernel(sc, s, big, DeviceOps::Poll::kDone),
                 ExpectedResults(big, big_writes));

  // The ring: one more check with findings than it has regions, the first
  // read last. Its region was written again by the last: lost, never read as
  // someone else's.
  std::vector<uint64_t> tickets;
  for (int i = 0; i < GMT_REPORT_RING_CHECKS + 1; ++i) {
    tickets.push_back(sc.ops().CheckAfterKernel(sc.context(), s, small, true));
    SC_CHECK(sc, tickets.back() != 0);
  }
  std::vector<GmtZoneResult> results;
  for (size_t i = tickets.size() - 1; i >= 1; --i) {
    SC_CHECK(sc, sc.ops().PollCheck(tickets[i], true, &results) ==
                     DeviceOps::Poll::kDone);
    if (i == tickets.size() - 1) {
      CompareResults(sc, "the ring's last check", results,
                     ExpectedResults(small, writes));
    }
  }
  SC_CHECK(sc, sc.ops().PollCheck(tickets[0], true, &results) ==
                   DeviceOps::Poll::kLost);
  d.stream_synchronize(stream);
  d.stream_destroy(stream);
}

// The kernels launched directly (no DeviceOps) with several grid sizes, so the
// grid-stride loop and the summary are checked too.
void KernelsDirect(ScenarioContext& sc) {
  TestDriver& d = sc.driver();
  CUlibrary library = nullptr;
  CUkernel fill = nullptr, check = nullptr;
  CUresult r = d.library_load_data(&library, gmt_zone_kernels_fatbin, nullptr,
                                   nullptr, 0, nullptr, nullptr, 0);
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&fill, library, GMT_FILL_KERNEL_NAME);
  }
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&check, library, GMT_CHECK_KERNEL_NAME);
  }
  if (r != CUDA_SUCCESS) {
    sc.Fail("loading the embedded fatbin: " + d.Name(r));
    return;
  }
  const uint64_t b = sc.Alloc(5 * kChunk);
  const uint64_t table = sc.Alloc(4096);
  if (b == 0 || table == 0) return;
  std::vector<GmtZone> zones = {
      {b + 1, kChunk - 1, 0x01, 0},  // ends on a chunk boundary of the block
      {b + kChunk, 0, 0x02, 0},
      {b + kChunk, 3 * kChunk, 0x03, 0},  // exactly three chunks
      {b + 4 * kChunk + 9, 77, 0x04, 0},
  };
  uint64_t total = 0;
  for (GmtZone& z : zones) {
    z.chunk_begin = total;
    total += (z.bytes + kChunk - 1) / kChunk;
  }
  const std::vector<Write> writes = {{b + 1, {0}},
                                     {b + kChunk - 1, {9}},
                                     {b + kChunk + 2 * kChunk - 8, {0, 0, 0}},
                                     {b + 4 * kChunk + 9 + 76, {5}}};
  const auto want = ExpectedResults(zones, writes);
  const GmtCheckSummary want_summary = ExpectedSummary(want);
  SC_CHECK_EQ(sc, want_summary.zones_changed, 3u);
  const CUdeviceptr results_at = table + 1024;
  const CUdeviceptr summary_at = table + 3072;
  if (d.memcpy_htod(table, zones.data(), zones.size() * sizeof(GmtZone)) !=
      CUDA_SUCCESS) {
    sc.Fail("uploading the table failed");
    return;
  }
  for (unsigned grid : {1u, 2u, 7u, 1000u}) {
    const std::string what = "grid " + std::to_string(grid);
    CUdeviceptr zones_arg = table;
    uint64_t count = zones.size();
    CUdeviceptr results_arg = results_at, summary_arg = summary_at;
    void* params[] = {&zones_arg, &count, &total, &results_arg, &summary_arg};
    r = d.launch_kernel(reinterpret_cast<CUfunction>(fill), grid, 1, 1, 256, 1,
                        1, 0, nullptr, params, nullptr);
    for (const Write& w : writes) {
      if (r == CUDA_SUCCESS) {
        r = d.memcpy_htod(w.address, w.bytes.data(), w.bytes.size());
      }
    }
    if (r == CUDA_SUCCESS) r = d.memset_d8(table + 1024, 0, 3072);
    if (r == CUDA_SUCCESS) {
      r = d.launch_kernel(reinterpret_cast<CUfunction>(check), grid, 1, 1, 256,
                          1, 1, 0, nullptr, params, nullptr);
    }
    std::vector<GmtZoneResult> results(zones.size());
    GmtCheckSummary summary{};
    if (r == CUDA_SUCCESS) r = d.ctx_synchronize();
    if (r == CUDA_SUCCESS) {
      r = d.memcpy_dtoh(results.data(), results_at,
                        results.size() * sizeof(GmtZoneResult));
    }
    if (r == CUDA_SUCCESS) {
      r = d.memcpy_dtoh(&summary, summary_at, sizeof(summary));
    }
    if (r != CUDA_SUCCESS) {
      sc.Fail(what + ": " + d.Name(r));
      return;
    }
    CompareResults(sc, what, results, want);
    SC_CHECK_EQ(sc, summary.zones_changed, want_summary.zones_changed);
    SC_CHECK_EQ(sc, summary.bytes_changed, want_summary.bytes_changed);
  }
}

}  // namespace

ScenarioContext::~ScenarioContext() {
  // Nothing of this scenario may still run when its blocks go (their memory
  // may be the next scenario's).
  driver_.ctx_synchronize();
  for (uint64_t block : blocks_) driver_.mem_free(block);
}

uint64_t ScenarioContext::Alloc(uint64_t bytes) {
  CUdeviceptr p = 0;
  CUresult r = driver_.mem_alloc(&p, bytes);
  if (r == CUDA_SUCCESS) r = driver_.memset_d8(p, 0, bytes);
  // cuMemsetD8 is asynchronous (the legacy stream), and the tool's fills run
  // on a non-blocking stream that does not wait for it: on a busy GPU the
  // zeroing can land after a fill and wipe the zones (the likely cause of
  // zones read as wholly changed on the H200 while the test shared the GPU).
  // Done before the scenario fills anything.
  if (r == CUDA_SUCCESS) r = driver_.ctx_synchronize();
  if (r != CUDA_SUCCESS) {
    Fail("cuMemAlloc(" + std::to_string(bytes) + "): " + driver_.Name(r));
    return 0;
  }
  blocks_.push_back(p);
  return p;
}

const std::vector<Scenario>& ZoneScenarios() {
  static const auto* const scenarios = new std::vector<Scenario>{
      {"ExactOffsets", ExactOffsets},
      {"RandomZones", RandomZones},
      {"AsyncChecks", AsyncChecks},
      {"ProgramStream", ProgramStream},
      {"CheckAndFill", CheckAndFill},
      {"ReadAndWrite", ReadAndWrite},
      {"Release", Release},
      {"EmptyInputs", EmptyInputs},
      {"ContextNotCurrent", ContextNotCurrent},
      {"SyncCaptureForget", SyncCaptureForget},
      {"KernelsDirect", KernelsDirect},
      {"KernelChecks", KernelChecks},
  };
  return *scenarios;
}

std::vector<GmtZoneResult> ExpectedResults(const std::vector<GmtZone>& zones,
                                           const std::vector<Write>& writes) {
  std::map<uint64_t, uint8_t> memory;  // the last value written per address
  for (const Write& w : writes) {
    for (size_t i = 0; i < w.bytes.size(); ++i)
      memory[w.address + i] = w.bytes[i];
  }
  std::vector<GmtZoneResult> results(zones.size(), GmtZoneResult{});
  for (size_t z = 0; z < zones.size(); ++z) {
    const GmtZone& zone = zones[z];
    auto it = memory.lower_bound(zone.address);
    for (; it != memory.end() && it->first < zone.address + zone.bytes; ++it) {
      if (it->second == static_cast<uint8_t>(zone.pattern)) continue;
      const uint64_t offset = it->first - zone.address;
      GmtZoneResult& r = results[z];
      if (r.changed_bytes == 0) r.first_inverted = ~offset;
      ++r.changed_bytes;
      r.last_plus1 = offset + 1;
    }
  }
  return results;
}

GmtCheckSummary ExpectedSummary(const std::vector<GmtZoneResult>& results) {
  GmtCheckSummary summary{};
  for (const GmtZoneResult& r : results) {
    if (r.changed_bytes == 0) continue;
    ++summary.zones_changed;
    summary.bytes_changed += r.changed_bytes;
  }
  return summary;
}

}  // namespace gmt_test
