// NVTX memory extension injection: pool allocators' annotations of their
// sub-allocations (nvtxMemHeapRegister, nvtxMemRegionsRegister, ...,
// <nvtx3/nvToolsExtMem.h>) reach the engine (lib/engine_nvtx_mem.cc) here.
// Only decodes NVTX's structures and forwards; the engine decides.
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
#include "interpose/nvtx_messages.h"
#include "lib/engine.h"
#include "lib/options.h"

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
  Engine* engine = Recording(scope);
  if (batch == nullptr || !LongEnough(batch->structSize, sizeof(*batch))) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  if (batch->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS) {
    Problem(engine, NvtxMemProblem::kUnsupportedType);
    return;
  }
  if (batch->regionCount == 0) return;
  const size_t stride =
      Stride(batch->regionDescElementSize, sizeof(nvtxMemVirtualRangeDesc_t));
  if (batch->regionDescElements == nullptr || stride == 0) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  // One stack for the batch: the pool's caller, captured once.
  const gmt::StackId stack =
      engine != nullptr ? engine->CaptureCallStack() : gmt::kNoStack;
  const auto* bytes =
      static_cast<const unsigned char*>(batch->regionDescElements);
  for (size_t i = 0; i < batch->regionCount; ++i) {
    const auto* range =
        reinterpret_cast<const nvtxMemVirtualRangeDesc_t*>(bytes + i * stride);
    if (engine != nullptr) {
      engine->OnNvtxRegionRegister(Address(batch->heap), Address(range->ptr),
                                   range->size, stack);
    }
    // The region's handle is its address (NVTX lets the program use either).
    if (batch->regionHandleElementsOut != nullptr) {
      batch->regionHandleElementsOut[i] =
          static_cast<nvtxMemRegionHandle_t>(const_cast<void*>(range->ptr));
    }
  }
}

void RegionsResize(nvtxDomainHandle_t,
                   const nvtxMemRegionsResizeBatch_t* batch) {
  InterceptScope scope;
  Engine* engine = Recording(scope);
  if (engine == nullptr) return;
  if (batch == nullptr || !LongEnough(batch->structSize, sizeof(*batch))) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  if (batch->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS) {
    Problem(engine, NvtxMemProblem::kUnsupportedType);
    return;
  }
  if (batch->regionDescCount == 0) return;
  const size_t stride =
      Stride(batch->regionDescElementSize, sizeof(nvtxMemVirtualRangeDesc_t));
  if (batch->regionDescElements == nullptr || stride == 0) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  const auto* bytes =
      static_cast<const unsigned char*>(batch->regionDescElements);
  for (size_t i = 0; i < batch->regionDescCount; ++i) {
    const auto* range =
        reinterpret_cast<const nvtxMemVirtualRangeDesc_t*>(bytes + i * stride);
    engine->OnNvtxRegionResize(Address(range->ptr), range->size);
  }
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
  if (engine == nullptr) return;
  if (batch == nullptr || !LongEnough(batch->structSize, sizeof(*batch))) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  if (batch->refCount == 0) return;
  const size_t stride =
      Stride(batch->refElementSize, sizeof(nvtxMemRegionRef_t));
  if (batch->refElements == nullptr || stride == 0) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  const auto* bytes =
      reinterpret_cast<const unsigned char*>(batch->refElements);
  for (size_t i = 0; i < batch->refCount; ++i) {
    const auto* ref =
        reinterpret_cast<const nvtxMemRegionRef_t*>(bytes + i * stride);
    uint64_t address = 0;
    if (!RefAddress(batch->refType, *ref, &address)) {
      Problem(engine, NvtxMemProblem::kBadDescriptor);
      return;
    }
    engine->OnNvtxRegionUnregister(address);
  }
}

void RegionsName(nvtxDomainHandle_t, const nvtxMemRegionsNameBatch_t* batch) {
  InterceptScope scope;
  Engine* engine = Recording(scope);
  if (engine == nullptr) return;
  if (batch == nullptr || !LongEnough(batch->structSize, sizeof(*batch))) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  if (batch->regionCount == 0) return;
  const size_t stride =
      Stride(batch->regionElementSize, sizeof(nvtxMemRegionNameDesc_t));
  if (batch->regionElements == nullptr || stride == 0) {
    Problem(engine, NvtxMemProblem::kBadDescriptor);
    return;
  }
  const auto* bytes =
      reinterpret_cast<const unsigned char*>(batch->regionElements);
  for (size_t i = 0; i < batch->regionCount; ++i) {
    const auto* d =
        reinterpret_cast<const nvtxMemRegionNameDesc_t*>(bytes + i * stride);
    uint64_t address = 0;
    if (!RefAddress(d->regionRefType, d->region, &address)) {
      Problem(engine, NvtxMemProblem::kBadDescriptor);
      continue;
    }
    engine->OnNvtxRegionName(address,
                             gmt::NvtxMessageText(d->nameType, d->name));
  }
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
