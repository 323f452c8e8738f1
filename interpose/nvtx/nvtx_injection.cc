// NVTX injection: the program's NVTX calls (nvtxRangePushA/Pop, the C++
// nvtx3::scoped_range, torch.cuda.nvtx.range_push, ...) reach the tool through
// NVTX's own tool interface, so each allocation can be attributed to the range
// open on its thread. Only forwards push/pop to lib/registry/nvtx_ranges.h.
//
// NVTX finds a tool through NVTX_INJECTION64_PATH: it dlopens that library at
// the program's first NVTX call and calls its exported
// InitializeInjectionNvtx2. `gpumemtrace run` sets the variable; under plain
// LD_PRELOAD the library sets it at load to its own path when it is unset (so
// a profiler's injection, set by the user, is never displaced) and nvtx=1 or
// nvtx_mem=1.
// NVTX's other route, the static-injection weak symbol
// InitializeInjectionNvtx2_fnptr, cannot be used by a preloaded library: the
// NVTX headers define it hidden in every module that uses them.
//
// What the program sees does not change: push and pop return
// NVTX_NO_PUSH_POP_TRACKING, as they do with no tool attached.
//
// Ranges of all NVTX domains share one stack per thread; process-wide
// start/end ranges (nvtxRangeStart/End) are not attributed: they are not tied
// to a thread.
//
// The same library is also NVTX's injection for the memory extension
// (nvtxMem*, pool allocators' sub-allocations): nvtx_mem_injection.cc.
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <limits.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "interpose/nvtx/nvtx_messages.h"
#include "lib/core/options.h"
#include "lib/engine/engine.h"

namespace {

using gmt::NarrowNvtxText;

std::string MessageOf(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr) return "";
  return gmt::NvtxMessageText(attributes->messageType, attributes->message);
}

// What NVTX returns with no tool attached: the program sees no difference.
constexpr int kUntracked = NVTX_NO_PUSH_POP_TRACKING;

int PushA(const char* message) {
  gmt::Engine::NvtxRangePush(message != nullptr ? message : "");
  return kUntracked;
}
int PushW(const wchar_t* message) {
  gmt::Engine::NvtxRangePush(NarrowNvtxText(message));
  return kUntracked;
}
int PushEx(const nvtxEventAttributes_t* attributes) {
  gmt::Engine::NvtxRangePush(MessageOf(attributes));
  return kUntracked;
}
int Pop() {
  gmt::Engine::NvtxRangePop();
  return kUntracked;
}
int DomainPushEx(nvtxDomainHandle_t, const nvtxEventAttributes_t* attributes) {
  gmt::Engine::NvtxRangePush(MessageOf(attributes));
  return kUntracked;
}
int DomainPop(nvtxDomainHandle_t) {
  gmt::Engine::NvtxRangePop();
  return kUntracked;
}
nvtxStringHandle_t DomainRegisterA(nvtxDomainHandle_t, const char* text) {
  return gmt::RegisterNvtxString(text != nullptr ? text : "");
}
nvtxStringHandle_t DomainRegisterW(nvtxDomainHandle_t, const wchar_t* text) {
  return gmt::RegisterNvtxString(NarrowNvtxText(text));
}

template <typename F>
void Set(NvtxFunctionTable table, unsigned size, unsigned id, F* fn) {
  if (table != nullptr && id < size && table[id] != nullptr) {
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  }
}

int Initialize(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(
      get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr ||
      callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core,
                                        &core_size) == 0) {
    return 0;
  }
  // nvtx=0 (the library may still be NVTX's injection for nvtx_mem=1):
  // ranges stay NVTX's no-ops; registered strings still name heaps and
  // regions.
  const bool ranges = gmt::GlobalOptions().nvtx;
  if (ranges) {
    Set(core, core_size, NVTX_CBID_CORE_RangePushA, &PushA);
    Set(core, core_size, NVTX_CBID_CORE_RangePushW, &PushW);
    Set(core, core_size, NVTX_CBID_CORE_RangePushEx, &PushEx);
    Set(core, core_size, NVTX_CBID_CORE_RangePop, &Pop);
  }
  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2,
                                        &core2_size) != 0) {
    if (ranges) {
      Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &DomainPushEx);
      Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &DomainPop);
    }
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA,
        &DomainRegisterA);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW,
        &DomainRegisterW);
  }
  if (const auto* version = static_cast<const NvtxExportTableVersionInfo*>(
          get_export_table(NVTX_ETID_VERSIONINFO));
      version != nullptr &&
      version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  return 1;
}

// At load, before the program's first NVTX call: point NVTX at this library
// unless the user pointed it elsewhere or turned the tool or both NVTX
// features (nvtx, nvtx_mem) off.
__attribute__((constructor)) void PointNvtxHere() {
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) return;
  const char* text = std::getenv("GMT_OPTIONS");
  gmt::ParseResult parsed = gmt::ParseOptions(text != nullptr ? text : "");
  if (!parsed.options.enabled ||
      (!parsed.options.nvtx && !parsed.options.nvtx_mem)) {
    return;
  }
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&PointNvtxHere), &info) == 0 ||
      info.dli_fname == nullptr) {
    return;
  }
  // Absolute: the program may change its working directory before NVTX loads.
  char* path = realpath(info.dli_fname, nullptr);
  if (path == nullptr) return;
  setenv("NVTX_INJECTION64_PATH", path, /*overwrite=*/0);
  std::free(path);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  return Initialize(get_export_table);
}

}  // extern "C"
