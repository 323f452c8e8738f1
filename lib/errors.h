// The errors gpumemtrace reports: one kind list (X-macro), one plain record.
//
// Records hold stack ids, not stacks; they are symbolized when printed.
#ifndef GMT_LIB_ERRORS_H_
#define GMT_LIB_ERRORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/oom_record.h"
#include "lib/registry.h"

namespace gmt {

// GMT_ERROR_KIND(Enum, "json-name", "what it means, for the text report")
#define GMT_ERROR_KINDS(X)                                                     \
  X(kOobWrite, "oob-write", "write past the end of an allocation")             \
  X(kOobUnderflow, "oob-underflow", "write before the start of an allocation") \
  X(kUafWrite, "uaf-write", "write into freed memory")                         \
  X(kDoubleFree, "double-free", "memory freed twice")                          \
  X(kInvalidFree, "invalid-free",                                              \
    "free of a pointer that is not the start of a live allocation")            \
  X(kApiBounds, "api-bounds", "copy or set past the end of an allocation")     \
  X(kOom, "oom", "allocation failed: out of memory")                           \
  X(kApiMismatch, "api-mismatch",                                              \
    "memory released by an API that does not match its allocator")            \
  /* a sticky CUDA error (illegal address, ...) */             \
  X(kCudaError, "cuda-error",                                                  \
    "a CUDA call returned a sticky error: the context is lost")

enum class ErrorKind : uint8_t {
#define GMT_ERROR_ENUM(Enum, Name, Meaning) Enum,
  GMT_ERROR_KINDS(GMT_ERROR_ENUM)
#undef GMT_ERROR_ENUM
};

absl::string_view ErrorKindName(ErrorKind kind);
absl::string_view ErrorKindMeaning(ErrorKind kind);

struct ErrorRecord {
  ErrorKind kind = ErrorKind::kInvalidFree;
  Api api = Api::kUnknown;  // the call that exposed it
  uint64_t address = 0;     // the pointer the call was given
  int64_t offset = 0;       // address - allocation start, when one is known
  uint64_t bytes = 0;       // bytes involved (size of the bad access)
  std::optional<AllocationRecord> allocation;  // the block it concerns
  std::optional<FreedRecord> previous_free;    // for double-free
  StackId stack = kNoStack;                    // where the call was made
  uint32_t thread = 0;
  int64_t time_ns = 0;
  int cuda_result = 0;  // what CUDA returned to the program
  std::string cuda_result_name;
  std::string detail;  // one plain sentence

  // Guard-zone findings (oob-write, oob-underflow, uaf-write): changed bytes
  // relative to the user's start (`offset` is first_offset, `bytes` is
  // changed_bytes), the kernels that ran since the last clean check, and
  // which check found them ("sync", "kernel", "exit", "free", ...).
  bool has_range = false;
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  uint64_t changed_bytes = 0;
  std::vector<std::string> kernels;
  uint64_t kernels_omitted = 0;  // older kernels not listed
  std::string check;
  std::string call;  // api-bounds: the copy/set entry point ("cudaMemcpy")
  // Suppressions (lib/suppressions.h): the rule that would silence this
  // error, filled when a report is built.
  std::string suppression;
  // (kind oom): the diagnosis (lib/oom_diagnosis.h).
  std::optional<OomDiagnosis> oom;
};

}  // namespace gmt

#endif  // GMT_LIB_ERRORS_H_
