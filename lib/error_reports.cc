#include "lib/error_reports.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/clock.h"

namespace gmt {
namespace {

ErrorRecord Base(ErrorKind kind, Api api, uint64_t address, StackId stack,
                 int cuda_result, const char* cuda_result_name) {
  ErrorRecord e;
  e.kind = kind;
  e.api = api;
  e.address = address;
  e.stack = stack;
  e.thread = CurrentThreadIndex();
  e.time_ns = NowNs();
  e.cuda_result = cuda_result;
  e.cuda_result_name = cuda_result_name ? cuda_result_name : "";
  return e;
}

}  // namespace

void ReportDoubleFree(Engine& engine, Api api, uint64_t address, StackId stack,
                      const FreedRecord& previous, int cuda_result,
                      const char* cuda_result_name) {
  ErrorRecord e = Base(ErrorKind::kDoubleFree, api, address, stack, cuda_result,
                       cuda_result_name);
  e.allocation = previous.allocation;
  e.previous_free = previous;
  e.bytes = previous.allocation.bytes;
  e.detail = absl::StrFormat(
      "%s of 0x%x, a %s block of %d bytes that %s already freed", ApiName(api),
      address, ApiName(previous.allocation.api), previous.allocation.bytes,
      ApiName(previous.free_api));
  engine.RecordError(std::move(e));
}

void ReportInvalidFree(Engine& engine, Api api, uint64_t address, StackId stack,
                       const AllocationRecord* containing, int cuda_result,
                       const char* cuda_result_name) {
  ErrorRecord e = Base(ErrorKind::kInvalidFree, api, address, stack,
                       cuda_result, cuda_result_name);
  if (containing != nullptr) {
    e.allocation = *containing;
    e.offset = static_cast<int64_t>(address - containing->address);
    e.detail = absl::StrFormat(
        "%s of 0x%x, which points %d bytes into a %d-byte %s block (free its "
        "start, 0x%x)",
        ApiName(api), address, e.offset, containing->bytes,
        ApiName(containing->api), containing->address);
  } else {
    e.detail = absl::StrFormat(
        "%s of 0x%x, which no tracked allocation returned (a host pointer, a "
        "stale or made-up address)",
        ApiName(api), address);
  }
  engine.RecordError(std::move(e));
}

void ReportApiMismatch(Engine& engine, Api api, StackId stack,
                       const AllocationRecord& block, int cuda_result,
                       const char* cuda_result_name) {
  ErrorRecord e = Base(ErrorKind::kApiMismatch, api, block.address, stack,
                       cuda_result, cuda_result_name);
  e.allocation = block;
  e.bytes = block.bytes;
  e.detail = absl::StrFormat("%s cannot release 0x%x: it is %s memory from %s",
                             ApiName(api), block.address,
                             MemoryKindName(block.kind), ApiName(block.api));
  engine.RecordError(std::move(e));
}

}  // namespace gmt
