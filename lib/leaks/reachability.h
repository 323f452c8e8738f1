// Reachability of device memory at exit: LeakSanitizer's flood fill, applied
// to the blocks the program got from CUDA.
//
// A live device (or managed, or pinned host) block is "still reachable" when
// some 8-byte aligned value in the program's memory points anywhere into it
// (interior pointers and pointers into a guarded block's redzones count);
// otherwise it is "definitely lost". The program's memory is its roots
// (writable globals of its modules, thread stacks) and the host heap objects
// reachable from them, transitively:
//
//   worklist = roots
//   while worklist not empty:
//     for each aligned word v in worklist.pop():
//       if v points into a live CUDA block: mark it reachable (its contents,
//                                            device memory, are not read)
//       else if v points into an unvisited heap object: push that object
//
// This file is the algorithm only, on interfaces: it is tested on made-up
// memory (tests/unit/reachability_test.cc). Where the roots and heap objects of
// the real process come from is lib/leaks/reachability_linux.h.
//
// Thread safety: FloodFill has no shared state; the reader and oracle are used
// from the calling thread only.
#ifndef GMT_LIB_LEAKS_REACHABILITY_H_
#define GMT_LIB_LEAKS_REACHABILITY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gmt {

// [begin, end) of the address space.
struct AddressRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end > begin ? end - begin : 0; }
  bool Contains(uint64_t address) const {
    return address >= begin && address < end;
  }
};

// Reads memory without ever faulting.
class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies up to `bytes` from `address` into `out`; returns how many bytes
  // were copied from the start of the range (fewer, or 0, where memory is not
  // readable).
  virtual size_t Read(uint64_t address, void* out, size_t bytes) = 0;
  // Appends to `parts` the pieces of `range`, in address order, that can hold
  // a value the program stored; FloodFill reads only those. The rest is
  // memory that cannot (unreadable, code, device mappings, pages the program
  // never touched), and reading it would only cost time. The default: all of
  // it.
  virtual void PointerHoldingParts(const AddressRange& range,
                                   std::vector<AddressRange>* parts) {
    parts->push_back(range);
  }
};

// Knows where the heap objects are.
class HeapOracle {
 public:
  virtual ~HeapOracle() = default;
  // The user range of the in-use heap object that `address` points into (at
  // its start, or inside it where the oracle can tell), or nullopt when
  // `address` is no heap object it knows.
  virtual std::optional<AddressRange> ObjectAt(uint64_t address) = 0;
  // Told the words of a window before ObjectAt is asked about some of them,
  // so that what it will read for them can be read in one go. Optional.
  virtual void Prefetch(const uint64_t* words, size_t count) {
    (void)words;
    (void)count;
  }
};

// When to give up: a scan that hits either bound stops and is "truncated".
struct ReachLimits {
  uint64_t max_bytes = 0;   // bytes read from roots and heap objects; 0: none
  int64_t deadline_ns = 0;  // monotonic clock (CLOCK_MONOTONIC); 0: none
};

// One link of a chain: the word at `word` points into the heap object
// [object, object + object_size).
// `object_first_word`: the object's first word, which names its owner when
// it is a vtable or a code pointer.
struct ReachHop {
  uint64_t word = 0;
  uint64_t object = 0;
  uint64_t object_size = 0;
  uint64_t object_first_word = 0;
};

// Longest chain kept per block: its first and last kMaxReachHops / 2 links
// (the root's end tells which global or stack, the block's end whose object
// holds the pointer).
inline constexpr size_t kMaxReachHops = 8;

struct ReachResult {
  // Per block, in the order the blocks were given: a pointer to it was found.
  std::vector<bool> reachable;
  uint64_t bytes_scanned = 0;    // bytes of roots and heap objects read
  uint64_t roots = 0;            // root ranges scanned
  uint64_t heap_objects = 0;     // heap objects scanned
  uint64_t runtime_objects = 0;  // heap objects of the runtime, not followed
  bool truncated = false;  // a limit was hit: unmarked blocks are not proven
                           // lost
  // Per reachable block: the root (index into the roots given) whose chain
  // led to it, and the address of the word that pointed at it (in that root
  // or in a heap object reached from it). -1 / 0 for unmarked blocks.
  std::vector<int32_t> via_root;
  std::vector<uint64_t> via_word;
  // Per reachable block: the heap objects its chain went through, from the
  // root on (empty when the root itself held the pointer). Tells the user, or
  // the tool's developer, why a block counts as reachable.
  std::vector<std::vector<ReachHop>> via_chain;
  // Per reachable block: links left out of the middle of a longer chain.
  std::vector<uint32_t> via_chain_elided;
};

// The flood fill. `blocks`: the extents of the live CUDA blocks (raw extent
// for guarded ones), in any order, not overlapping. `roots`: ranges to start
// from; unreadable parts are skipped.
// `runtime_images`: the loaded images (code and data) of the CUDA runtime and
// driver. A heap object that holds a pointer into one of them (a vtable, a
// callback) is one of their objects: it is not followed, since their tables
// keep a copy of every device pointer. (Seen on the H200: the program's
// fat-binary handle, a global, led into the runtime's heap and made a dropped
// block "reachable".)
// `near_roots`: how many of the first roots to search breadth first, a few
// links deep (kNearLinks), before the depth-first fill from every root: an
// allocator's globals reach its blocks in a few links, and depth first a
// single early pointer can lead through most of the heap before the next
// word of the same root is looked at (seen on the H200: a PyTorch segment
// found 488 links deep from the allocator's globals, 39 MB read, where
// another of its globals held it 2 links away). The verdicts do not depend
// on it.
inline constexpr uint32_t kNearLinks = 3;
inline constexpr uint64_t kNearBytes = uint64_t{8} << 20;  // its read budget
ReachResult FloodFill(const std::vector<AddressRange>& roots,
                      const std::vector<AddressRange>& blocks,
                      MemoryReader& reader, HeapOracle& heap,
                      const ReachLimits& limits,
                      const std::vector<AddressRange>& runtime_images = {},
                      size_t near_roots = 0);

}  // namespace gmt

#endif  // GMT_LIB_LEAKS_REACHABILITY_H_
