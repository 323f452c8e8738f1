#include "interpose/nvtx/nvtx_messages.h"

#include <utility>

#include "absl/container/node_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace gmt {

std::string NarrowNvtxText(const wchar_t* text) {
  std::string out;
  if (text == nullptr) return out;
  for (; *text != 0; ++text) {
    out.push_back(*text > 0 && *text < 128 ? static_cast<char>(*text) : '?');
  }
  return out;
}

nvtxStringHandle_t RegisterNvtxString(std::string text) {
  static absl::Mutex& mu = *new absl::Mutex;
  static auto& strings = *new absl::node_hash_set<std::string>;
  absl::MutexLock lock(&mu);
  const std::string& kept = *strings.insert(std::move(text)).first;
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<std::string*>(&kept));
}

std::string NvtxMessageText(uint32_t type, const nvtxMessageValue_t& value) {
  switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return value.ascii != nullptr ? value.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return NarrowNvtxText(value.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      // Only handles this library gave out reach here: NVTX hands
      // nvtxDomainRegisterString to the injection that is attached.
      if (value.registered == nullptr) return "";
      return *reinterpret_cast<const std::string*>(value.registered);
    default:
      return "";
  }
}

}  // namespace gmt
