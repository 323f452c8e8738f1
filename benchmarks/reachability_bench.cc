// The exit-time reachability scan (lib/leaks/reachability_linux.h) in a
// process shaped like a Python/PyTorch one: hundreds of mappings, a large
// host heap of linked objects, pointers into object arenas that are not
// malloc's (pymalloc), a large malloc'd buffer the program never touched,
// and 10 000 live device blocks, half of them held by heap objects and half
// lost (so the scan cannot stop early: the worst case).
//
// Prints the scan's milliseconds per run (the time column: the scan alone,
// measured by the tool); the target is <= 100 ms with 10 000 live blocks.
// Counters: bytes read, heap objects followed, blocks found reachable.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "lib/leaks/reachability_linux.h"

namespace gmt {
namespace {

constexpr int kLiveBlocks = 10000;
constexpr int kArrays = 2000;
constexpr int kPerArray = 200;
constexpr uint64_t kBlockBytes = 4096;
// "Device" addresses: a reservation nothing else can be placed in.
constexpr uint64_t kReservationBytes = uint64_t{kLiveBlocks} * kBlockBytes;

struct Node {
  Node* next;          // here: the array of arrays, for the first node
  void* arena_object;  // a pointer into an "object arena" (pymalloc-like)
  uint64_t device;     // a block's address, or 0
  uint64_t payload[5];
};

// Block addresses are kept XOR-ed with this key outside the scan, so that no
// copy of them is a pointer the scan could find.
constexpr uint64_t kHideKey = 0x5a5a5a5a5a5a5a5a;

// The process's shape, built once.
struct Shape {
  uint64_t device_base = 0;
  std::vector<uint64_t> hidden_blocks;  // start ^ kHideKey
  Node* head = nullptr;                 // reached from a global (g_shape)
  std::vector<void*> arenas;            // anonymous read-write mappings
  std::vector<void*> read_only;         // anonymous read-only mappings
  void* untouched = nullptr;            // a large malloc never written
};

Shape* volatile g_shape = nullptr;
Shape* BuildShape();
// Built before main(), on the main thread: its objects are in glibc's main
// arena ([heap]), where a Python process keeps its malloc'd objects
// (benchmark functions may run on a thread of their own, with its own arena).
const bool g_shape_built = [] {
  Shape* shape = BuildShape();
  g_shape = shape;
  return shape != nullptr;
}();

Shape* BuildShape() {
  auto* s = new Shape;
  void* reservation = mmap(nullptr, kReservationBytes, PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  s->device_base = reinterpret_cast<uint64_t>(reservation);
  for (int i = 0; i < kLiveBlocks; ++i) {
    s->hidden_blocks.push_back((s->device_base + uint64_t(i) * kBlockBytes) ^
                               kHideKey);
  }
  // 300 "object arenas" of 256 KiB (pymalloc's size), written, each alone
  // in its mapping (read-only neighbours keep them from merging).
  for (int i = 0; i < 300; ++i) {
    void* a = mmap(nullptr, 256 * 1024, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::memset(a, 0x11, 256 * 1024);
    s->arenas.push_back(a);
    void* r =
        mmap(nullptr, 64 * 1024, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    s->read_only.push_back(r);
  }
  // 400 000 heap objects, held by 2 000 pointer arrays of 200 (as Python's
  // lists and dicts hold objects), those by one array: a graph that fans
  // out. Every object points into an arena; every 40th holds a block (half
  // the blocks); the other half is lost.
  std::mt19937_64 random(1);
  auto** top = new Node**[kArrays];
  int held = 0;
  for (int a = 0; a < kArrays; ++a) {
    top[a] = new Node*[kPerArray];
    for (int i = 0; i < kPerArray; ++i) {
      auto* n = new Node{};
      char* arena = static_cast<char*>(s->arenas[random() % s->arenas.size()]);
      n->arena_object = arena + 16 * (random() % (256 * 1024 / 16));
      if ((a * kPerArray + i) % 40 == 0 && held < kLiveBlocks / 2) {
        n->device = (s->hidden_blocks[2 * held] ^ kHideKey) + 64;
        ++held;
      }
      top[a][i] = n;
    }
  }
  Node* head = new Node{};
  head->next = reinterpret_cast<Node*>(top);
  // A 1 GiB buffer (an mmapped chunk) the program never touched.
  s->untouched = std::malloc(size_t{1} << 30);
  Node* holder = new Node{};
  holder->next = head;
  holder->arena_object = s->untouched;
  s->head = holder;
  return s;
}

// Only the objects that hold a block stay reachable.
void DropObjectsWithoutBlocks(Shape& s) {
  auto** top = reinterpret_cast<Node***>(s.head->next->next);
  for (int a = 0; a < kArrays; ++a) {
    for (int i = 0; i < kPerArray; ++i) {
      if (top[a][i]->device == 0) top[a][i] = nullptr;
    }
  }
}

// Scans this process; `figures`: ms, bytes, objects, reachable, truncated,
// CPU ms.
__attribute__((noinline)) void ScanFromHere(const Shape& s, double* figures) {
  const uint64_t stack_from =
      reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  std::vector<AddressRange> blocks;
  for (uint64_t hidden : s.hidden_blocks) {
    blocks.push_back({hidden ^ kHideKey, (hidden ^ kHideKey) + kBlockBytes});
  }
  ReachLimits limits;
  limits.max_bytes = uint64_t{1} << 40;
  timespec cpu0{}, cpu1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
  ProcessReach scan = ScanProcess(blocks, stack_from, {}, limits);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
  figures[0] = static_cast<double>(scan.ns) * 1e-6;
  figures[1] = static_cast<double>(scan.result.bytes_scanned);
  figures[2] = static_cast<double>(scan.result.heap_objects);
  figures[3] = 0;
  for (bool r : scan.result.reachable) figures[3] += r ? 1 : 0;
  figures[4] = scan.result.truncated ? 1.0 : 0.0;
  figures[5] =
      (cpu1.tv_sec - cpu0.tv_sec) * 1e3 + (cpu1.tv_nsec - cpu0.tv_nsec) * 1e-6;
}

// In this process, not a forked child: after a fork every page the scan
// reads is shared copy-on-write, and process_vm_readv copies it (the kernel
// unshares a page it pins), which would be measured too. python_heap=1 runs
// first: python_heap=0 drops objects for good.
void BM_ScanProcess10kLiveBlocks(benchmark::State& state) {
  static bool dropped = false;
  if (state.range(0) == 0 && !dropped) {
    DropObjectsWithoutBlocks(*g_shape);
    dropped = true;
  }
  double figures[6] = {};
  for (auto _ : state) {
    ScanFromHere(*g_shape, figures);
    state.SetIterationTime(figures[0] * 1e-3);
  }
  state.counters["ms_per_scan"] = figures[0];
  state.counters["target_ms"] = 100;
  state.counters["MiB_read"] = figures[1] / (1 << 20);
  state.counters["heap_objects"] = figures[2];
  state.counters["reachable"] = figures[3];
  state.counters["expected_reachable"] = kLiveBlocks / 2;
  state.counters["truncated"] = figures[4];
  // The scan's CPU time: on a loaded machine, wall time shows the others.
  state.counters["cpu_ms_per_scan"] = figures[5];
}
// heap_objects=0: a native program's shape (10 000 live blocks, 600
// mappings, the blocks held by 5 000 small heap objects, no big heap);
// heap_objects=1: a Python process's (400 000 objects in pointer arrays,
// each pointing into an object arena, and a 1 GiB malloc never touched).
BENCHMARK(BM_ScanProcess10kLiveBlocks)
    ->ArgName("python_heap")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseManualTime();

}  // namespace
}  // namespace gmt
