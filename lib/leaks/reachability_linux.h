// The real process behind lib/leaks/reachability.h: its roots and heap objects
// on Linux/glibc, read without ever faulting.
//
// Roots
//  * Writable PT_LOAD segments (data, bss) of every loaded module
//    (dl_iterate_phdr), except the CUDA libraries' and the tool's own (see
//    IsCudaOrToolModule): the driver and runtime keep a table of every device
//    pointer, and counting those would make every block look reachable. Nor
//    libc's (libc.so*): its stdio buffers and malloc bookkeeping hold stale
//    heap contents, never the program's pointers.
//  * The calling thread's stack from `stack_from` up: the frames below it are
//    the tool's own (they hold its copies of every block). The program's
//    callee-saved registers are spilled in the frames above it on the way into
//    the tool, so they are scanned too.
//  * Every other thread's stack: anonymous read-write mappings right above a
//    PROT_NONE guard page (glibc's pthread stacks, static TLS included). From
//    the thread's stack pointer up where /proc/self/task/<tid>/syscall tells
//    it (a blocked thread on most kernels); else the whole mapping, stale
//    frames included (they can only make a block look reachable). A thread
//    started by a CUDA library or the tool is not a root: the first code
//    pointer read down from the top of its mapping (its descriptor's start
//    routine, its outermost frame), libc's skipped, is in that library.
//    Limits: threads with stacks the program allocated itself are not found;
//    glibc's cache of exited threads' stacks is scanned like a live one.
//
// Heap objects (glibc malloc; heuristics, documented so they can be judged)
//  * Main arena ([heap] mapping): walked chunk by chunk from its start,
//    following the size fields; a chunk is in use when the next chunk's
//    PREV_INUSE bit is set. Pointers anywhere inside an in-use chunk count.
//    Freed chunks in tcache/fastbins keep PREV_INUSE set, so a dangling
//    pointer to one can make a block look reachable (never lost wrongly).
//  * Other anonymous read-write mappings (mmapped chunks, thread arenas):
//    only a pointer to the start of a chunk's user data is followed; the chunk
//    header before it must be consistent (size a multiple of 16, inside the
//    mapping; mmapped: page-aligned base; arena: NON_MAIN_ARENA set and the
//    next chunk's PREV_INUSE set). Interior pointers there are not followed.
//  * Memory of other allocators (Python's pymalloc arenas, custom pools) is
//    not recognized as objects: what is reachable only through it looks lost.
//  * Device (and managed, pinned) blocks are never read as host objects.
//
// All reads go through process_vm_readv on the process itself (a fault is a
// short read, not a signal); where that call is refused, through a copy of
// the mapping list checked before every read.
#ifndef GMT_LIB_LEAKS_REACHABILITY_LINUX_H_
#define GMT_LIB_LEAKS_REACHABILITY_LINUX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/leaks/reachability.h"

namespace gmt {

// A line of /proc/self/maps.
struct MappingInfo {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool shared = false;  // MAP_SHARED ('s'), else private ('p')
  std::string path;     // "" for anonymous, "[heap]", "[stack]", a file
  bool Contains(uint64_t a) const { return a >= begin && a < end; }
};

// Whether memory of mapping `m` can hold a value the program stored at run
// time (a heap or device address). Not:
//  * unreadable memory (PROT_NONE reservations, guard pages);
//  * file-backed memory that is not writable: code, read-only data, RELRO
//    (written only by the loader, with addresses of symbols);
//  * the kernel's [vvar], [vvar_vclock], [vdso], [vsyscall];
//  * GPU device files' mappings (/dev/nvidia*, /dev/dri/*): device or driver
//    memory; reading it is slow and may move managed pages to the host.
// Anything else is scanned, anonymous read-only memory included (a program
// may write a table and then mprotect it).
bool MappingCanHoldPointers(const MappingInfo& m);

// Which pages of a range the process has ever touched.
class PageResidency {
 public:
  virtual ~PageResidency() = default;
  // Fills `touched` (one entry per page from page number `first_page`) with
  // whether each page is present or swapped out; false when it cannot tell.
  virtual bool Touched(uint64_t first_page, size_t pages,
                       std::vector<bool>* touched) = 0;
};

// Appends to `parts` the pieces of `range` that can hold a pointer: inside a
// mapping of `maps` (sorted) that MappingCanHoldPointers, less the runs of
// pages of a private mapping that `residency` (may be null) says were never
// touched, where the piece is large enough for the question to pay (a page
// never touched reads as zeros, or as the file's contents, which no run-time
// address is in). Shared mappings are read whole: their pages may hold data
// another mapping wrote.
void PointerHoldingParts(const AddressRange& range,
                         const std::vector<MappingInfo>& maps,
                         PageResidency* residency,
                         std::vector<AddressRange>* parts);

// Whether a module (a path or file name) belongs to the CUDA libraries or the
// tool: libcuda.so*, libcudart*, libcupti*, libnvidia-*, libnvrtc*,
// libcublas* (libcublasLt too), libcudnn*, libnccl*, libcufft*, libcurand*,
// libcusparse*, libcusolver*, libnvJitLink*, libgpumemtrace*. The test
// double's stand-ins are named libcuda.so.1 and libcudart.so.13, so they count.
bool IsCudaOrToolModule(absl::string_view path);

struct ProcessReach {
  ReachResult result;
  int64_t ns = 0;  // wall time of the whole scan
  // Of it: reading the modules' symbol tables (the CUDA runtime's globals),
  // and the flood fill from the roots (heap walk included).
  int64_t symbols_ns = 0;
  int64_t flood_ns = 0;
  uint64_t modules = 0;           // modules whose globals were roots
  uint64_t modules_excluded = 0;  // CUDA / tool modules left out
  uint64_t threads = 0;           // thread stacks scanned (this one included)
  uint64_t threads_excluded = 0;  // CUDA / tool helper threads left out
  uint64_t threads_unknown = 0;   // no stack pointer from the kernel
  // Bytes of the program's globals left out as the CUDA runtime's own
  // (lib/leaks/cuda_runtime_globals.h), and modules whose symbol table was
  // read.
  uint64_t runtime_globals_bytes = 0;
  uint64_t modules_with_symbols = 0;
  // What each root is ("globals of libfoo.so", "stack of thread 1234"), in
  // the order of result.via_root's indices.
  std::vector<std::string> root_labels;
};

// Scans this process. `blocks`: extents of the live CUDA blocks (see
// FloodFill). `stack_from`: an address in the calling thread's stack; only
// what lies above it (older frames) is a root. `ignored_objects`: addresses of
// heap objects that belong to the tool (its engine), never followed.
// `tool_ranges`: memory of the tool's own (e.g. the timeline ring, an
// anonymous mapping) that is never a root, whatever it looks like.
// `allocating_code`: code addresses that allocated the blocks (their
// innermost program frames); the globals of their modules are scanned first.
// The verdicts do not depend on it, only how soon the scan can stop.
ProcessReach ScanProcess(const std::vector<AddressRange>& blocks,
                         uint64_t stack_from,
                         const std::vector<uint64_t>& ignored_objects,
                         const ReachLimits& limits,
                         const std::vector<AddressRange>& tool_ranges = {},
                         const std::vector<uint64_t>& allocating_code = {});

}  // namespace gmt

#endif  // GMT_LIB_LEAKS_REACHABILITY_LINUX_H_
