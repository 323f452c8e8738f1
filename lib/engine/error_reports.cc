#include "lib/engine/error_reports.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/core/clock.h"

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

void ReportGuardFinding(Engine& engine, const GuardFinding& f) {
  ErrorRecord e = Base(f.kind, f.block.api,
                       f.block.address + static_cast<uint64_t>(f.first_offset),
                       kNoStack, 0, nullptr);
  e.allocation = f.block;
  if (f.freed) e.previous_free = f.freed;
  e.offset = f.first_offset;
  e.bytes = f.changed_bytes;
  e.has_range = true;
  e.first_offset = f.first_offset;
  e.last_offset = f.last_offset;
  e.changed_bytes = f.changed_bytes;
  e.kernels_omitted = f.kernels_omitted;
  for (uint32_t k : f.kernels) e.kernels.push_back(engine.KernelName(k));
  e.check = f.check;
  e.suspects_checked = f.suspects_checked;
  const AllocationRecord& b = f.block;
  const std::string where =
      f.kind == ErrorKind::kOobUnderflow
          ? absl::StrFormat("%d to %d bytes before its start", -f.last_offset,
                            -f.first_offset)
      : f.kind == ErrorKind::kOobWrite
          ? absl::StrFormat("offsets %d..%d, %d to %d bytes past its end",
                            f.first_offset, f.last_offset,
                            f.first_offset - static_cast<int64_t>(b.bytes),
                            f.last_offset - static_cast<int64_t>(b.bytes))
          : absl::StrFormat("offsets %d..%d, after %s freed it", f.first_offset,
                            f.last_offset,
                            f.freed ? ApiName(f.freed->free_api) : "a free");
  e.detail =
      absl::StrFormat("%d byte%s changed in the %d-byte %s block 0x%x: %s",
                      f.changed_bytes, f.changed_bytes == 1 ? "" : "s", b.bytes,
                      ApiName(b.api), b.address, where);
  engine.RecordError(std::move(e));
}

void ReportApiBounds(Engine& engine, absl::string_view call, uint64_t address,
                     uint64_t bytes, const AllocationRecord& block,
                     bool rejected, StackId stack) {
  ErrorRecord e =
      Base(ErrorKind::kApiBounds, block.api, address, stack, 1, nullptr);
  e.call = std::string(call);
  e.allocation = block;
  e.offset = static_cast<int64_t>(address - block.address);
  e.bytes = bytes;
  e.cuda_result_name = absl::StartsWith(call, "cuda")
                           ? "cudaErrorInvalidValue"
                           : "CUDA_ERROR_INVALID_VALUE";
  const int64_t end = e.offset + static_cast<int64_t>(bytes);
  e.detail = absl::StrFormat(
      "%s of %d bytes at offset %d of the %d-byte %s block 0x%x reaches "
      "offset %d, %d bytes %s%s",
      call, bytes, e.offset, block.bytes, ApiName(block.api), block.address,
      end, e.offset < 0 ? -e.offset : end - static_cast<int64_t>(block.bytes),
      e.offset < 0 ? "before its start" : "past its end",
      rejected ? "; rejected as CUDA would without redzones" : "");
  engine.RecordError(std::move(e));
}

}  // namespace gmt
