#include "lib/launch/launch_reach.h"

#include <algorithm>
#include <cstring>

namespace gmt {
namespace {

// CUDA's limit on a kernel's parameters is 32764 bytes (CUDA 12.1; 4 KiB
// before): anything larger is not a parameter buffer CUDA accepted.
constexpr uint64_t kMaxParamBytes = 32768;
// `extra` is a handful of key/value pairs; a longer list is not one.
constexpr size_t kMaxExtraPairs = 16;

// The aligned words of `bytes` at `data`, which sits at `offset` of the
// kernel's parameter buffer.
void AppendWords(const void* data, uint64_t bytes, uint64_t offset,
                 uint32_t param, size_t max_words,
                 std::vector<ArgWord>* words) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (uint64_t k = (8 - offset % 8) % 8;
       k + 8 <= bytes && words->size() < max_words; k += 8) {
    uint64_t value = 0;
    std::memcpy(&value, p + k, sizeof(value));
    if (value < kLowestAddressWord) continue;
    words->push_back(ArgWord{value, param, static_cast<uint32_t>(offset + k)});
  }
}

uint32_t ParamAt(const ParamLayout* layout, uint64_t offset) {
  if (layout == nullptr) return kNoParam;
  for (size_t i = 0; i < layout->params.size(); ++i) {
    const ParamSlot& s = layout->params[i];
    if (offset >= s.offset && offset < uint64_t{s.offset} + s.size) {
      return static_cast<uint32_t>(i);
    }
  }
  return kNoParam;
}

}  // namespace

bool ReadArgWords(const LaunchArgs& args, const ParamLayout* layout,
                  std::vector<ArgWord>* words, size_t max_words) {
  const size_t limit = words->size() + std::min(max_words, kMaxParamBytes / 8);
  if (args.params != nullptr) {
    if (layout == nullptr) return false;
    for (size_t i = 0; i < layout->params.size(); ++i) {
      const ParamSlot& s = layout->params[i];
      const void* value = args.params[i];
      if (value == nullptr || s.size > kMaxParamBytes) return false;
      if (words->size() >= limit) continue;  // each still checked readable
      AppendWords(value, s.size, s.offset, static_cast<uint32_t>(i), limit,
                  words);
    }
    return true;
  }
  if (args.extra == nullptr) return true;  // no parameters at all
  const void* buffer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; i < kMaxExtraPairs; ++i) {
    const auto key = reinterpret_cast<uintptr_t>(args.extra[2 * i]);
    if (key == kLaunchParamEnd) break;
    if (key == kLaunchParamBufferPointer) buffer = args.extra[2 * i + 1];
    if (key == kLaunchParamBufferSize) {
      size = static_cast<const size_t*>(args.extra[2 * i + 1]);
    }
  }
  if (buffer == nullptr || size == nullptr || *size > kMaxParamBytes) {
    return false;
  }
  // The buffer is the kernel's parameter buffer itself: aligned from 0.
  const size_t first = words->size();
  AppendWords(buffer, *size, 0, kNoParam, limit, words);
  for (size_t i = first; i < words->size(); ++i) {
    (*words)[i].param = ParamAt(layout, (*words)[i].offset);
  }
  return true;
}

uint64_t BlockRanges::FindInTree(uint64_t address) const {
  // The last block starting at or before `address`.
  auto it = ranges_.upper_bound(address);
  if (it == ranges_.begin()) return 0;
  --it;
  return address <= it->second ? it->first : 0;
}

std::vector<uint64_t> ReachedBlocks(absl::Span<const ArgWord> words,
                                    const BlockRanges& ranges) {
  std::vector<uint64_t> blocks;
  for (const ArgWord& w : words) {
    const uint64_t begin = ranges.Find(w.value);
    if (begin == 0) continue;
    // Pointers into the same block often follow each other (a tensor's data
    // and its end, the operands of an in-place op).
    if (!blocks.empty() && blocks.back() == begin) continue;
    if (std::find(blocks.begin(), blocks.end(), begin) != blocks.end()) {
      continue;
    }
    blocks.push_back(begin);
  }
  return blocks;
}

}  // namespace gmt
