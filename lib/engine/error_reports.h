// One entry point per error kind (ASan's asan_report.h habit): each builds the
// plain ErrorRecord and hands it to Engine::RecordError, which prints, stores
// and decides whether to halt.
#ifndef GMT_LIB_ENGINE_ERROR_REPORTS_H_
#define GMT_LIB_ENGINE_ERROR_REPORTS_H_

#include "lib/engine/engine.h"
#include "lib/guard/guard_manager.h"

namespace gmt {

// `address` was freed by `api` (stack `stack`) although `previous` already
// freed it.
void ReportDoubleFree(Engine& engine, Api api, uint64_t address, StackId stack,
                      const FreedRecord& previous, int cuda_result,
                      const char* cuda_result_name);

// `address` is not the start of any live block. `containing` is the block it
// points into, if any (an interior pointer).
void ReportInvalidFree(Engine& engine, Api api, uint64_t address, StackId stack,
                       const AllocationRecord* containing, int cuda_result,
                       const char* cuda_result_name);

// `api` cannot release `block` (e.g. cudaFreeHost on cudaMalloc memory).
void ReportApiMismatch(Engine& engine, Api api, StackId stack,
                       const AllocationRecord& block, int cuda_result,
                       const char* cuda_result_name);

// A guard-zone check found changed bytes around or inside `f.block`.
void ReportGuardFinding(Engine& engine, const GuardFinding& f);

// A copy/set `call` on [address, address + bytes) leaves `block`. `rejected`:
// the tool answered invalid-value itself (the range ran into its redzone).
void ReportApiBounds(Engine& engine, absl::string_view call, uint64_t address,
                     uint64_t bytes, const AllocationRecord& block,
                     bool rejected, StackId stack);

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_ERROR_REPORTS_H_
