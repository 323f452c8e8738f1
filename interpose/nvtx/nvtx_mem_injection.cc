// NVTX memory extension injection: pool allocators' annotations of their
// sub-allocations (nvtxMemHeapRegister, nvtxMemRegionsRegister, ...,
// <nvtx3/nvToolsExtMem.h>) reach the engine (lib/engine/engine_nvtx_mem.cc)
// here. Only decodes NVTX's structures and forwards; the engine decides.
//
// How NVTX finds it: NVTX's extensions are not in the core callback tables
// that InitializeInjectionNvtx2 fills (nvtx_injection.cc). At the first
// nvtxMem* call of a module, NVTX dlopens the same NVTX_INJECTION64_PATH
// library and calls its exported InitializeInjectionNvtxExtension with the
// extension's module info: one segment of function slots, indexed by the
// NVTX3EXT_CBID_* ids. A slot left empty becomes a no-op.
//
// What the program sees:
//  * nvtxMemHeapRegister returns the heap's address, as NVTX documents for
//    NVTX_MEM_TYPE_VIRTUAL_ADDRESS heaps (and as compute-sanitizer does),
//    where NVTX without a tool returns null. For other heap types it returns
//    the type-specific descriptor pointer (unique per object), for a
//    descriptor it cannot read null, NVTX's answer without a tool.
//  * nvtxMemRegionsRegister writes each region's address as its handle into
//    regionHandleElementsOut when the program passed one.
//  * The permissions calls (nvtxMemPermissions*, nvtxMemCudaGet*Permissions,
//    nvtxMemCudaSetPeerAccess) and nvtxMemCudaMarkInitialized are left to
//    NVTX's no-ops: the tool checks bounds and leaks, not access rights or
//    initialization, so they return what they return without a tool.
//
// Bad input (null descriptors, short structures, unsupported types, zero
// sizes, unknown handles) is counted by the engine and never dereferenced
// beyond what the descriptor's own sizes allow. A descriptor whose
// structSize, or element size, is 0 is read as this header's layout: NVTX's
// examples zero-initialize and some programs forget to fill those fields.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "interpose/intercept_scope.h"
#include "interpose/nvtx/nvtx_messages.h"
#include "lib/core/options.h"
#include "lib/engine/engine.h"

namespace {

using gmt::Engine;
using gmt::InterceptScope;
using gmt::NvtxMemProblem;

uint64_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Whether a structure the program says is `struct_size` bytes holds the
// fields up to `needed` bytes (0: not filled in, read as ours).
bool LongEnough(uint16_t struct_size, size_t needed) {
  return struct_size == 0 || struct_size >= needed;
}

// The stride of an element array: `element_size` (0: ours), or 0 when it is
// too small to hold `needed` bytes.
size_t Stride(size_t element_size, size_t needed) {
  if (element_size == 0) return needed;
  return element_size >= needed ? element_size : 0;
}

// The engine for a call the tool records, or nullptr (tool off, or a call
// made under another intercepted call).
Engine* Recording(const InterceptScope& scope) {
  return scope.Recording() ? &Engine::Get() : nullptr;
}

void Problem(Engine* engine, NvtxMemProblem problem) {
  if (engine != nullptr) engine->NoteNvtxMemProblem(problem);
}

// The opening every batch handler shares: whether `batch` is one the tool
// can read (present, as long as the fields it reads, and, where it names a
// region type, of virtual addresses). A bad one is counted.
template <typename Batch>
bool UsableBatch(Engine* engine, const Batch* batch) {
  if (batch == nullptr || !LongEnough(batch->structSize, sizeof(*batch))) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return false;
  }
  if constexpr (requires { batch->regionType; }) {
    if (batch->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS) {
      Problem(engine, NvtxMemProblem::kUnsupportedType);
      return false;
    }
  }
  return true;
}

// Walks a batch's array of `count` elements of type T laid out
// `element_size` bytes apart (0: sizeof(T)), calling visit(index, element)
// until it returns false. A missing array, or elements too small to hold a
// T, is a bad descriptor: nothing is read.
template <typename T, typename Visit>
void ForEachElement(Engine* engine, const void* elements, size_t count,
                    size_t element_size, Visit visit) {
  if (count == 0) return;
  const size_t stride = Stride(element_size, sizeof(T));
  if (elements == nullptr || stride == 0) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  const auto* bytes = static_cast<const unsigned char*>(elements);
  for (size_t i = 0; i < count; ++i) {
    if (!visit(i, *reinterpret_cast<const T*>(bytes + i * stride))) return;
  }
}

nvtxMemHeapHandle_t HeapRegister(nvtxDomainHandle_t,
                                 const nvtxMemHeapDesc_t* desc) {
  InterceptScope scope;
  Engine* engine = Recording(scope);
  if (desc == nullptr || !LongEnough(desc->structSize, sizeof(*desc))) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return nullptr;
  }
  if (desc->type != NVTX_MEM_TYPE_VIRTUAL_ADDRESS) {
    Problem(engine, NvtxMemProblem::kUnsupportedType);
    return static_cast<nvtxMemHeapHandle_t>(
        const_cast<void*>(desc->typeSpecificDesc));
  }
  const auto* range =
      static_cast<const nvtxMemVirtualRangeDesc_t*>(desc->typeSpecificDesc);
  if (range == nullptr ||
      (desc->typeSpecificDescSize != 0 &&
       desc->typeSpecificDescSize < sizeof(nvtxMemVirtualRangeDesc_t))) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return nullptr;
  }
  auto handle = static_cast<nvtxMemHeapHandle_t>(const_cast<void*>(range->ptr));
  if (range->ptr == nullptr || range->size == 0) {
    Problem(engine, NvtxMemProblem::kZeroSize);
    return handle;
  }
  if (engine != nullptr) {
    engine->OnNvtxHeapRegister(
        Address(range->ptr), range->size, desc->usage,
        gmt::NvtxMessageText(desc->messageType, desc->message));
  }
  return handle;
}

void HeapUnregister(nvtxDomainHandle_t, nvtxMemHeapHandle_t heap) {
  InterceptScope scope;
  if (Engine* engine = Recording(scope)) {
    engine->OnNvtxHeapEnd(Address(heap), /*unregister=*/true);
  }
}

void HeapReset(nvtxDomainHandle_t, nvtxMemHeapHandle_t heap) {
  InterceptScope scope;
  if (Engine* engine = Recording(scope)) {
    engine->OnNvtxHeapEnd(Address(heap), /*unregister=*/false);
  }
}

void RegionsRegister(nvtxDomainHandle_t,
                     const nvtxMemRegionsRegisterBatch_t* batch) {
  InterceptScope scope;
  // Not recorded, the handles are still handed out.
  Engine* engine = Recording(scope);
  if (!UsableBatch(engine, batch) || batch->regionCount == 0) return;
  // One stack for the batch: the pool's caller, captured once.
  const gmt::StackId stack =
      engine != nullptr ? engine->CaptureCallStack() : gmt::kNoStack;
  ForEachElement<nvtxMemVirtualRangeDesc_t>(
      engine, batch->regionDescElements, batch->regionCount,
      batch->regionDescElementSize,
      [&](size_t i, const nvtxMemVirtualRangeDesc_t& range) {
        if (engine != nullptr) {
          engine->OnNvtxRegionRegister(Address(batch->heap), Address(range.ptr),
                                       range.size, stack);
        }
        // The region's handle is its address (NVTX lets the program use
        // either).
        if (batch->regionHandleElementsOut != nullptr) {
          batch->regionHandleElementsOut[i] =
              static_cast<nvtxMemRegionHandle_t>(const_cast<void*>(range.ptr));
        }
        return true;
      });
}

void RegionsResize(nvtxDomainHandle_t,
                   const nvtxMemRegionsResizeBatch_t* batch) {
  InterceptScope scope;
  Engine* engine = Recording(scope);
  if (engine == nullptr || !UsableBatch(engine, batch)) return;
  ForEachElement<nvtxMemVirtualRangeDesc_t>(
      engine, batch->regionDescElements, batch->regionDescCount,
      batch->regionDescElementSize,
      [engine](size_t, const nvtxMemVirtualRangeDesc_t& range) {
        engine->OnNvtxRegionResize(Address(range.ptr), range.size);
        return true;
      });
}

// A region reference as an address: pointers and handles are the same here
// (the handles this library gives out are the regions' addresses). False for
// a reference type it does not know.
bool RefAddress(uint32_t ref_type, const nvtxMemRegionRef_t& ref,
                uint64_t* address) {
  switch (ref_type) {
    case NVTX_MEM_REGION_REF_TYPE_POINTER:
      *address = Address(ref.pointer);
      return true;
    case NVTX_MEM_REGION_REF_TYPE_HANDLE:
      *address = Address(ref.handle);
      return true;
    default:
      return false;
  }
}

void RegionsUnregister(nvtxDomainHandle_t,
                       const nvtxMemRegionsUnregisterBatch_t* batch) {
  InterceptScope scope;
  Engine* engine = Recording(scope);
  if (engine == nullptr || !UsableBatch(engine, batch)) return;
  // A reference type it cannot read stops the batch: every element has it.
  ForEachElement<nvtxMemRegionRef_t>(
      engine, batch->refElements, batch->refCount, batch->refElementSize,
      [engine, batch](size_t, const nvtxMemRegionRef_t& ref) {
        uint64_t address = 0;
        if (!RefAddress(batch->refType, ref, &address)) {
          Problem(engine, NvtxMemProblem::kBadDescriptor);
          return false;
        }
        engine->OnNvtxRegionUnregister(address);
        return true;
      });
}

void RegionsName(nvtxDomainHandle_t, const nvtxMemRegionsNameBatch_t* batch) {
  InterceptScope scope;
  Engine* engine = Recording(scope);
  if (engine == nullptr || !UsableBatch(engine, batch)) return;
  // Each name carries its own reference type: a bad one skips that name.
  ForEachElement<nvtxMemRegionNameDesc_t>(
      engine, batch->regionElements, batch->regionCount,
      batch->regionElementSize,
      [engine](size_t, const nvtxMemRegionNameDesc_t& d) {
        uint64_t address = 0;
        if (!RefAddress(d.regionRefType, d.region, &address)) {
          Problem(engine, NvtxMemProblem::kBadDescriptor);
          return true;
        }
        engine->OnNvtxRegionName(address,
                                 gmt::NvtxMessageText(d.nameType, d.name));
        return true;
      });
}

template <typename F>
void Set(intptr_t* slots, size_t count, unsigned id, F* fn) {
  if (id < count) slots[id] = reinterpret_cast<intptr_t>(fn);
}

int Initialize(nvtxExtModuleInfo_t* info) {
  if (info == nullptr || info->structSize < sizeof(nvtxExtModuleInfo_t)) {
    return 0;
  }
  // Other extensions (payloads, counters, ...) are not the tool's business:
  // attached, but every slot left to NVTX's no-op. So is the memory
  // extension with nvtx_mem=0, or of an incompatible major version.
  const gmt::Options& options = gmt::GlobalOptions();
  if (info->moduleId != NVTX_EXT_MODULEID_MEM || !options.enabled ||
      !options.nvtx_mem ||
      (info->compatId >> 8) != (NVTX_EXT_COMPATID_MEM >> 8) ||
      info->segments == nullptr) {
    return 1;
  }
  for (size_t s = 0; s < info->segmentsCount; ++s) {
    nvtxExtModuleSegment_t& segment = info->segments[s];
    if (segment.segmentId != 1 || segment.functionSlots == nullptr) continue;
    intptr_t* slots = segment.functionSlots;
    const size_t n = segment.slotCount;
    Set(slots, n, NVTX3EXT_CBID_nvtxMemHeapRegister, &HeapRegister);
    Set(slots, n, NVTX3EXT_CBID_nvtxMemHeapUnregister, &HeapUnregister);
    Set(slots, n, NVTX3EXT_CBID_nvtxMemHeapReset, &HeapReset);
    Set(slots, n, NVTX3EXT_CBID_nvtxMemRegionsRegister, &RegionsRegister);
    Set(slots, n, NVTX3EXT_CBID_nvtxMemRegionsResize, &RegionsResize);
    Set(slots, n, NVTX3EXT_CBID_nvtxMemRegionsUnregister, &RegionsUnregister);
    Set(slots, n, NVTX3EXT_CBID_nvtxMemRegionsName, &RegionsName);
  }
  return 1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(
    nvtxExtModuleInfo_t* info) {
  return Initialize(info);
}

}  // extern "C"
