// Where a module keeps the CUDA runtime's own state among its globals, so
// that the reachability scan (lib/leaks/reachability_linux.h) does not take the
// runtime's tables for the program's pointers.
//
// Two kinds of globals hold the runtime's pointers inside a program's own
// module, where excluding libcudart.so does not reach them:
//  * nvcc's per-module handles: `__cudaFatCubinHandle` (what
//    __cudaRegisterFatBinary returned), `__nv_fatbinhandle_for_managed_rt`,
//    and each kernel stub's `__handle` (what __cudaGetKernel returned). Seen
//    on the H200: __cudaFatCubinHandle -> the runtime's module object -> ~300
//    of its heap objects -> a record holding a dropped block's address, which
//    made a truly lost block "still reachable".
//  * The whole of a statically linked runtime (nvcc's default,
//    -cudart static): its globals are named libcudart_static_<hash>.
// They are found by name in the module's ELF symbol table (.symtab), read
// with libelf loaded at run time (it comes with libdw, the symbolizer's
// library). A stripped module has no .symtab: its ranges stay unknown, and
// the scan falls back to recognizing the fat-binary handle's object by its
// contents (lib/leaks/reachability.h).
#ifndef GMT_LIB_LEAKS_CUDA_RUNTIME_GLOBALS_H_
#define GMT_LIB_LEAKS_CUDA_RUNTIME_GLOBALS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/leaks/reachability.h"

namespace gmt {

// Whether a symbol of a program's module is the CUDA runtime's state (see
// above), by its (mangled) name.
bool IsCudaRuntimeGlobalName(absl::string_view name);

struct RuntimeGlobals {
  std::vector<AddressRange> ranges;  // sorted, merged, at run-time addresses
  bool symbols_read = false;         // the module had a .symtab we read
  std::string note;                  // why not, when not
};

// The runtime's globals in the module file `path` loaded with `load_bias`
// (dl_iterate_phdr's dlpi_addr). Never fails hard: an unreadable file, no
// libelf or no .symtab give no ranges and a note. Each file's symbol table
// is read once per process (a framework's modules hold millions of
// symbols): later calls for the same file (path, inode, size, time) answer
// from a cache. Thread-safe.
RuntimeGlobals FindCudaRuntimeGlobals(const std::string& path,
                                      uint64_t load_bias);

// How many symbol tables FindCudaRuntimeGlobals has read (not answered from
// its cache) in this process.
uint64_t CudaRuntimeGlobalsTablesRead();

// `range` without the parts covered by `holes` (sorted, not overlapping).
std::vector<AddressRange> SubtractRanges(
    const AddressRange& range, const std::vector<AddressRange>& holes);

}  // namespace gmt

#endif  // GMT_LIB_LEAKS_CUDA_RUNTIME_GLOBALS_H_
