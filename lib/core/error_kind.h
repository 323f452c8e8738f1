// The kinds of error gpumemtrace reports, declared once (X-macro): the enum,
// the name in JSON reports and suppressions, and a plain meaning for the text
// report. The record each one carries is lib/report/errors.h.
#ifndef GMT_LIB_CORE_ERROR_KIND_H_
#define GMT_LIB_CORE_ERROR_KIND_H_

#include <cstdint>

#include "absl/strings/string_view.h"

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
    "memory released by an API that does not match its allocator")             \
  X(kCudaError, "cuda-error",                                                  \
    "a CUDA call returned a sticky error: the context is lost")

enum class ErrorKind : uint8_t {
#define GMT_ERROR_ENUM(Enum, Name, Meaning) Enum,
  GMT_ERROR_KINDS(GMT_ERROR_ENUM)
#undef GMT_ERROR_ENUM
};

absl::string_view ErrorKindName(ErrorKind kind);
absl::string_view ErrorKindMeaning(ErrorKind kind);

}  // namespace gmt

#endif  // GMT_LIB_CORE_ERROR_KIND_H_
