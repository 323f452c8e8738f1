// Reaching a program's direct calls into libcuda from an injection.
//
// Under CUDA_INJECTION64_PATH alone, an object that links libcuda and calls
// cuMemsetD8 and friends by name goes through its own PLT/GOT slot to
// libcuda, and the shims never see the call. With guard zones that is not
// only a blind spot: the driver then measures a range against the block
// with its redzones, and accepts a memset one byte past the program's end
// that it refuses without the tool (seen on the H200: api_bounds's
// "cuMemsetD8 past end" returned CUDA_SUCCESS, not CUDA_ERROR_INVALID_VALUE).
//
// PatchDriverImports walks each loaded object's dynamic relocations (the
// PLT's jump slots and the GOT's data slots), and for every undefined symbol
// the tool shims ("cuMemsetD8_v2") whose slot holds libcuda's function, or
// still the object's own lazy-binding stub, stores the real function in the
// shim's slot and writes the shim into the slot: what LD_PRELOAD's symbol
// lookup would have bound. A slot in a RELRO range (a BIND_NOW object) is
// made writable for the write and read-only again after. Slots bound to
// anything else (another tool's interposer) are left alone; libcuda,
// libcupti, this library, the loader and libc are skipped.
//
// Objects loaded after the call keep their own bindings; the CUPTI callbacks
// still see their calls.
#ifndef GMT_INTERPOSE_RESOLVE_DRIVER_IMPORT_PATCH_H_
#define GMT_INTERPOSE_RESOLVE_DRIVER_IMPORT_PATCH_H_

namespace gmt {

// Returns the number of slots redirected. Call only where the shims are not
// interposed (ShimsInterposed() false). Thread-safe; idempotent.
int PatchDriverImports();

}  // namespace gmt

#endif  // GMT_INTERPOSE_RESOLVE_DRIVER_IMPORT_PATCH_H_
