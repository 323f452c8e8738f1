// Reaching a program's driver table from an injection.
//
// Under CUDA_INJECTION64_PATH alone, a runtime that fetched its driver entry
// points before cuInit (the injection runs inside the first cuInit) holds
// libcuda's own functions, and the shims — which guard zones need — are
// bypassed. PatchDriverTables finds such pointers in the process's writable
// data (the static runtime's table in the executable's .data/.bss, a GOT
// bound to libcuda) and replaces each with the matching shim, storing the
// real function in the shim's slot first: what the cuGetProcAddress hook does
// under LD_PRELOAD, after the fact.
//
// Only exact, aligned 64-bit words equal to the address of a libcuda function
// the tool shims are touched; libcuda, libcupti and this library are skipped,
// as are RELRO ranges (read-only after relocation). A pointer that a program
// keeps to a libcuda function it did not get from cuGetProcAddress is a
// function pointer too, and the shim forwards it the same way.
#ifndef GMT_INTERPOSE_RESOLVE_DRIVER_TABLE_PATCH_H_
#define GMT_INTERPOSE_RESOLVE_DRIVER_TABLE_PATCH_H_

#include <cstdint>

namespace gmt {

// Whether the object loaded at `base` from `name` is left alone by both
// patches (this one and driver_import_patch.h): libcuda, libcupti, this
// library, the NVIDIA libraries, the loader, libc.
bool ExemptFromDriverPatches(const char* name, uintptr_t base);

// Returns the number of words replaced. Call only where the shims are not
// interposed (ShimsInterposed() false). Thread-safe; idempotent.
int PatchDriverTables();

}  // namespace gmt

#endif  // GMT_INTERPOSE_RESOLVE_DRIVER_TABLE_PATCH_H_
