// What the allocating and freeing shims share, runtime and driver alike:
// forward the call, capture the caller's stack, and tell the engine what
// came back. One template each, over the API's result type (cudaError_t or
// CUresult, ResultCodes below) and the type the pointer comes back in
// (void* for the runtime and host memory, CUdeviceptr for device memory,
// opaque handles).
//
//   return TrackedAlloc<cudaError_t>(Api::kCudaMallocHost, p, bytes, 0,
//                                    [&] { return real(p, bytes); });
//   return GuardedAlloc<CUresult>(Api::kCuMemAlloc, dptr, bytes, 0,
//       [&](uint64_t n, CUdeviceptr* out) { return real(out, n); });
//   return TrackedFree<cudaError_t>(Api::kCudaFree, AddressOf(p),
//       [&](uint64_t q) { return real(FromAddress<void*>(q)); });
//
// The policy (how big a guarded block is, retries when CUDA has no memory
// for redzones) is the engine's (lib/guard/guarded_alloc.h); a shim only
// makes the calls it is asked to make.
#ifndef GMT_INTERPOSE_ALLOC_SHIMS_H_
#define GMT_INTERPOSE_ALLOC_SHIMS_H_

#include <cstdint>
#include <optional>
#include <type_traits>
#include <variant>

#include "interpose/oom_shim_util.h"
#include "interpose/shim.h"
#include "lib/core/tool_time.h"

namespace gmt {

// The result codes of one API: the runtime's cudaError_t, the driver's
// CUresult.
template <typename Result>
struct ResultCodes;

template <>
struct ResultCodes<cudaError_t> {
  static constexpr cudaError_t kSuccess = cudaSuccess;
  static constexpr cudaError_t kInvalidValue = cudaErrorInvalidValue;
  static const char* Name(cudaError_t r) {
    return r == cudaSuccess ? "cudaSuccess" : RuntimeResultName(r);
  }
};

template <>
struct ResultCodes<CUresult> {
  static constexpr CUresult kSuccess = CUDA_SUCCESS;
  static constexpr CUresult kInvalidValue = CUDA_ERROR_INVALID_VALUE;
  static const char* Name(CUresult r) {
    return r == CUDA_SUCCESS ? "CUDA_SUCCESS" : DriverResultName(r);
  }
};

// Addresses as the engine keeps them, and back.
inline uint64_t AddressOf(const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}
inline uint64_t AddressOf(CUdeviceptr p) { return static_cast<uint64_t>(p); }
template <typename Handle>
requires std::is_pointer_v<Handle>
inline uint64_t AddressOf(Handle h) {
  return AddressOf(reinterpret_cast<const void*>(h));
}
template <typename Out>
inline Out FromAddress(uint64_t address) {
  if constexpr (std::is_pointer_v<Out>) {
    return reinterpret_cast<Out>(static_cast<uintptr_t>(address));
  } else {
    return static_cast<Out>(address);
  }
}

// The runtime remembers the last error of each thread's calls; a guarded
// allocation that needed a second call (out of memory with redzones, then a
// retry) leaves the first call's failure there although the program's call
// succeeded. RuntimeLastErrorGuard keeps the program's view: what the runtime
// held before the allocation is what cudaGetLastError reports after it.
class RuntimeLastErrorGuard {
 public:
  RuntimeLastErrorGuard();
  // The allocation made more than one call and succeeded in the end.
  void RestoreAfterRetry();

 private:
  cudaError_t before_ = cudaSuccess;
};

// Forwards an allocating call that the tool tracks but never enlarges (host
// memory, registrations, arrays, handles); on success records *out as
// `bytes` of `api`.
template <typename Result, typename Out, typename Call>
Result TrackedAlloc(Api api, Out* out, uint64_t bytes, uint64_t stream,
                    Call&& call) {
  InterceptScope scope;
  if (!scope.Recording()) return call();
  SampledCallTime timed(ToolCall::kAllocation);
  StackId stack = Engine::Get().CaptureCallStack();
  Result result = timed.Forward(call);
  if (result == ResultCodes<Result>::kSuccess && out != nullptr) {
    RecordAlloc(api, AddressOf(*out), bytes, stream, stack);
  }
  return result;
}

// A linear device or managed allocation, with redzones when the engine
// guards it: `call(bytes, &out)` makes the real call for `bytes`. A
// stream-ordered one names its `pool` (0: the current device's); a block of
// a pool the program shares with other processes is never guarded.
template <typename Result, typename Out, typename Call>
Result GuardedAlloc(Api api, Out* out, uint64_t bytes, uint64_t stream,
                    Call&& call, uint64_t pool = 0) {
  InterceptScope scope;
  if (!scope.Recording() || out == nullptr) return call(bytes, out);
  SampledCallTime timed(ToolCall::kAllocation);
  Engine& engine = Engine::Get();
  const StackId stack = engine.CaptureCallStack();
  std::conditional_t<std::is_same_v<Result, cudaError_t>, RuntimeLastErrorGuard,
                     std::monostate>
      last_error;
  // An allocation asks for its context once, when it needs it before the
  // call: for a stream-ordered one's pool owner, or for a checked block that
  // may serve it (Engine::AllocateLinear); the record takes it too.
  const bool async = FamilyOf(api) == GuardFamily::kAsync;
  const bool may_reuse = async ? engine.guard().ReusesBlocks()
                               : FamilyOf(api) == GuardFamily::kDevice &&
                                     engine.guard().ReusesDeviceBlocks();
  std::optional<CallContext> where;
  if (may_reuse || (async && engine.AnyShareablePool())) {
    where = CurrentCallContext();
  }
  bool may_guard = true;
  if (async && where && engine.AnyShareablePool()) {
    may_guard = !engine.PoolShareable(pool, where->device);
  }
  const uint64_t context = where && may_reuse ? where->context : 0;
  // What CUDA wrote into the program's pointer on its last call: a failure
  // leaves it there as CUDA does (cudaMalloc nulls it).
  Out last{};
  GuardedAllocation a = engine.AllocateLinear(
      api, bytes, stream,
      [&](uint64_t n, uint64_t* raw) {
        last = *out;
        const Result r = timed.Forward([&] { return call(n, &last); });
        *raw = AddressOf(last);
        return static_cast<int>(r);
      },
      may_guard, context);
  const auto result = static_cast<Result>(a.result);
  if (a.result == 0) {
    *out = FromAddress<Out>(a.user);
    RecordAlloc(api, a.user, bytes, stream, stack, -2, a.guarded ? a.raw : 0,
                a.guarded ? a.raw_bytes : 0,
                // No context before the call: CUDA's call made one.
                where && where->context != 0 ? &*where : nullptr);
    if constexpr (std::is_same_v<Result, cudaError_t>) {
      if (a.retried) last_error.RestoreAfterRetry();
    }
  } else {
    *out = last;
    if (IsOutOfMemory(a.result)) NoteAllocFailure(api, bytes, stack, a.result);
  }
  return result;
}

// A pitched (2-D) or 3-D allocation of `rows` rows (slices) whose least row
// (slice) size is `least_row_bytes` (0 when it cannot be computed: never
// guarded then). `call(rows, &raw, &pitch)` makes the real call for `rows`
// and writes the block and the row (slice) size CUDA chose. On success
// *user and *pitch are the program's.
template <typename Result, typename Call>
Result GuardedRowsAlloc(Api api, uint64_t rows, uint64_t least_row_bytes,
                        uint64_t* user, uint64_t* pitch, Call&& call) {
  SampledCallTime timed(ToolCall::kAllocation);
  Engine& engine = Engine::Get();
  const StackId stack = engine.CaptureCallStack();
  std::conditional_t<std::is_same_v<Result, cudaError_t>, RuntimeLastErrorGuard,
                     std::monostate>
      last_error;
  GuardedAllocation a = engine.AllocateRows(
      api, rows, least_row_bytes,
      [&](uint64_t n, uint64_t* raw, uint64_t* row_bytes) {
        return static_cast<int>(
            timed.Forward([&] { return call(n, raw, row_bytes); }));
      });
  if (a.result == 0) {
    *user = a.user;
    *pitch = a.pitch;
    // CUDA made `rows` rows of `pitch`: their product fits.
    RecordAlloc(api, a.user, a.pitch * rows, 0, stack, -2,
                a.guarded ? a.raw : 0, a.guarded ? a.raw_bytes : 0);
    if constexpr (std::is_same_v<Result, cudaError_t>) {
      if (a.retried) last_error.RestoreAfterRetry();
    }
  } else if (IsOutOfMemory(a.result)) {
    // The pitch is unknown after a failure: the least row size.
    uint64_t requested = 0;
    if (__builtin_mul_overflow(rows, least_row_bytes, &requested)) {
      requested = ~uint64_t{0};
    }
    NoteAllocFailure(api, requested, stack, a.result);
  }
  return static_cast<Result>(a.result);
}

// The shared free protocol (see Engine): remove, call, confirm or restore.
// `call(pointer)` frees `pointer` with CUDA: the raw block of a guarded one.
// A block the tool keeps in quarantine is not handed to CUDA at all; a
// pointer CUDA would refuse without the tool (the raw start of a block the
// tool still holds) is refused the same way without calling CUDA.
template <typename Result, typename Call>
Result TrackedFree(Api api, uint64_t address, Call&& call,
                   uint64_t stream = 0) {
  InterceptScope scope;
  if (!scope.Recording()) return call(address);
  using Codes = ResultCodes<Result>;
  SampledCallTime timed(ToolCall::kFree);
  Engine& engine = Engine::Get();
  const StackId stack = engine.CaptureCallStack();
  FreeTicket ticket = engine.BeginFree(api, address, stack, stream);
  if (ticket.held) {
    engine.EndFree(ticket, true, 0, Codes::Name(Codes::kSuccess));
    return Codes::kSuccess;
  }
  if (ticket.rejected) {
    // See FreeTicket::rejected: CUDA's answer without the tool.
    if constexpr (std::is_same_v<Result, cudaError_t>) {
      NoteRuntimeError(cudaErrorInvalidValue);
    }
    engine.EndFree(ticket, false, static_cast<int>(Codes::kInvalidValue),
                   Codes::Name(Codes::kInvalidValue));
    return Codes::kInvalidValue;
  }
  const Result result =
      timed.Forward([&] { return call(ticket.real_address); });
  const bool ok = result == Codes::kSuccess;
  engine.EndFree(ticket, ok, static_cast<int>(result), Codes::Name(result));
  return result;
}

}  // namespace gmt

#endif  // GMT_INTERPOSE_ALLOC_SHIMS_H_
