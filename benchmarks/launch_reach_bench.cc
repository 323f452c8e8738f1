// What a launch costs check=kernel on the host before any GPU work: reading
// the launch's parameter words (ReadArgWords) and finding the tracked blocks
// they point into (ReachedBlocks), for a parameter buffer shaped like a
// PyTorch elementwise kernel's: about a kilobyte, three data pointers, then
// the sizes and strides of its offset calculator as packed 32-bit integers
// and a few scalars. Most of its words are not addresses, and each is looked
// up among the blocks. Arg: how many blocks are tracked (9: the segments of
// PyTorch's caching allocator in the CNN of benchmarks/gpu/perf_suite.sh;
// 4096: tensor mode, every tensor a block, plus the quarantine).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "lib/launch/launch_args.h"
#include "lib/launch/launch_reach.h"
#include "lib/launch/param_layout.h"

namespace gmt {
namespace {

constexpr uint64_t kBase = 0x7f3a40000000ull;  // where a driver maps memory
constexpr uint64_t kBlockBytes = 2u << 20;
constexpr uint64_t kGap = 64u << 10;

struct PyTorchLikeLaunch {
  // Parameters: int n, three data pointers (as a by-value array), the
  // offset calculator (25 dimensions, each an integer divider: divisor,
  // magic multiplier and shift, then 25 strides for each of 3 operands, all
  // 32-bit), a double scalar.
  std::vector<unsigned char> n, data, calc, scalar;
  std::vector<void*> values;
  ParamLayout layout;

  explicit PyTorchLikeLaunch(uint64_t first_block, uint64_t blocks) {
    auto add = [&](std::vector<unsigned char>* bytes, uint32_t size,
                   uint32_t align) {
      uint32_t offset = 0;
      if (!layout.params.empty()) {
        const ParamSlot& last = layout.params.back();
        offset = (last.offset + last.size + align - 1) / align * align;
      }
      layout.params.push_back(ParamSlot{offset, size});
      bytes->assign(size, 0);
      values.push_back(bytes->data());
    };
    add(&n, 4, 4);
    add(&data, 24, 8);
    add(&calc, (3 + 3) * 25 * 4, 4);
    add(&scalar, 8, 8);
    const int32_t count = 64 * 16 * 62 * 62;
    std::memcpy(n.data(), &count, sizeof(count));
    for (uint64_t i = 0; i < 3; ++i) {
      const uint64_t block = (first_block + i * 7) % blocks;
      const uint64_t ptr = kBase + block * (kBlockBytes + kGap) + 4096 * i;
      std::memcpy(data.data() + 8 * i, &ptr, sizeof(ptr));
    }
    // A 64 x 16 x 62 x 62 activation: each dimension's divider, its strides
    // in bytes for three operands, zeros past the dimensions used.
    const uint32_t sizes[4] = {62, 62, 16, 64};
    const uint32_t magic[4] = {0x08421085u, 0x08421085u, 0x10000000u, 1u};
    const uint32_t shifts[4] = {6, 6, 4, 6};
    const uint32_t strides[4] = {4, 248, 15376, 246016};
    std::vector<uint32_t> words(calc.size() / 4, 0);
    for (size_t d = 0; d < 4; ++d) {
      words[3 * d] = sizes[d];
      words[3 * d + 1] = magic[d];
      words[3 * d + 2] = shifts[d];
      for (size_t op = 0; op < 3; ++op) words[75 + 25 * op + d] = strides[d];
    }
    std::memcpy(calc.data(), words.data(), calc.size());
    const double alpha = 0.5;
    std::memcpy(scalar.data(), &alpha, sizeof(alpha));
  }

  LaunchArgs args() const {
    LaunchArgs a;
    a.params = values.data();
    return a;
  }
};

void BM_ReachPyTorchParams(benchmark::State& state) {
  const auto blocks = static_cast<uint64_t>(state.range(0));
  BlockRanges ranges;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t begin = kBase + b * (kBlockBytes + kGap);
    ranges.Add(begin, begin + kBlockBytes);
  }
  PyTorchLikeLaunch launch(blocks / 2, blocks);
  const LaunchArgs args = launch.args();
  std::vector<ArgWord> words;
  size_t reached = 0;
  for (auto _ : state) {
    words.clear();
    if (!ReadArgWords(args, &launch.layout, &words)) {
      state.SkipWithError("the parameters could not be read");
      break;
    }
    const std::vector<uint64_t> found = ReachedBlocks(words, ranges);
    reached = found.size();
    benchmark::DoNotOptimize(found.data());
  }
  state.counters["words"] = static_cast<double>(words.size());
  state.counters["blocks_reached"] = static_cast<double>(reached);
  if (reached != 3) state.SkipWithError("expected the three data blocks");
}
BENCHMARK(BM_ReachPyTorchParams)->ArgName("blocks")->Arg(9)->Arg(4096);

}  // namespace
}  // namespace gmt
