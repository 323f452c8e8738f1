#include "lib/core/error_kind.h"

#include "absl/strings/string_view.h"

namespace gmt {
namespace {

struct KindInfo {
  absl::string_view name;
  absl::string_view meaning;
};

constexpr KindInfo kKinds[] = {
#define GMT_ERROR_INFO(Enum, Name, Meaning) {Name, Meaning},
    GMT_ERROR_KINDS(GMT_ERROR_INFO)
#undef GMT_ERROR_INFO
};

}  // namespace

absl::string_view ErrorKindName(ErrorKind kind) {
  return kKinds[static_cast<size_t>(kind)].name;
}

absl::string_view ErrorKindMeaning(ErrorKind kind) {
  return kKinds[static_cast<size_t>(kind)].meaning;
}

}  // namespace gmt
