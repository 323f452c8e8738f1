// The CUDA runtime's state among a module's globals
// (lib/leaks/cuda_runtime_globals.h): names, range arithmetic, and the symbol
// table of this very test binary, which defines globals named like nvcc's
// handles and a static runtime's.
#include "lib/leaks/cuda_runtime_globals.h"

#include <link.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

// Named like a statically linked runtime's global and nvcc's module handle;
// `used` keeps them in the symbol table.
extern "C" {
__attribute__((used)) void* libcudart_static_0123456789abcdef[4];
__attribute__((used)) void* gmt_test_program_global[4];
}
namespace {
__attribute__((used)) void** __cudaFatCubinHandle;
}  // namespace

namespace gmt {
namespace {

bool Covered(const std::vector<AddressRange>& ranges, const void* p,
             size_t bytes) {
  const auto a = reinterpret_cast<uint64_t>(p);
  for (const AddressRange& r : ranges) {
    if (r.begin <= a && a + bytes <= r.end) return true;
  }
  return false;
}

TEST(CudaRuntimeGlobals, Names) {
  EXPECT_TRUE(IsCudaRuntimeGlobalName(
      "libcudart_static_2a2a5d5b8b7512fe014ac99edceeeec3fcaf062b"));
  EXPECT_TRUE(IsCudaRuntimeGlobalName("_ZL20__cudaFatCubinHandle"));
  EXPECT_TRUE(IsCudaRuntimeGlobalName("__nv_fatbinhandle_for_managed_rt"));
  EXPECT_TRUE(IsCudaRuntimeGlobalName(
      "_ZZ32__device_stub__Z10FillKernelPhmhPhmhE8__handle"));
  EXPECT_FALSE(IsCudaRuntimeGlobalName("g_cache"));
  EXPECT_FALSE(IsCudaRuntimeGlobalName("_ZL15__fatDeviceText"));
  // A stub's other statics (its guard variable, __tmp) are no handles.
  EXPECT_FALSE(IsCudaRuntimeGlobalName(
      "_ZZ32__device_stub__Z10FillKernelPhmhPhmhE5__tmp"));
  EXPECT_FALSE(IsCudaRuntimeGlobalName("my_libcudart_static_copy"));
}

TEST(CudaRuntimeGlobals, SubtractRanges) {
  const AddressRange r{100, 200};
  EXPECT_EQ(SubtractRanges(r, {}).size(), 1u);
  auto pieces = SubtractRanges(r, {{50, 110}, {120, 130}, {190, 300}});
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].begin, 110u);
  EXPECT_EQ(pieces[0].end, 120u);
  EXPECT_EQ(pieces[1].begin, 130u);
  EXPECT_EQ(pieces[1].end, 190u);
  EXPECT_TRUE(SubtractRanges(r, {{0, 1000}}).empty());
  pieces = SubtractRanges(r, {{0, 10}, {300, 400}});
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].begin, 100u);
  EXPECT_EQ(pieces[0].end, 200u);
}

uint64_t ProgramLoadBias() {
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        *static_cast<uint64_t*>(data) = info->dlpi_addr;
        return 1;  // the first object is the program
      },
      &bias);
  return bias;
}

TEST(CudaRuntimeGlobals, FoundInThisProgramsSymbolTable) {
  const RuntimeGlobals g =
      FindCudaRuntimeGlobals("/proc/self/exe", ProgramLoadBias());
  if (!g.symbols_read) GTEST_SKIP() << "no symbol table: " << g.note;
  EXPECT_TRUE(Covered(g.ranges, libcudart_static_0123456789abcdef,
                      sizeof(libcudart_static_0123456789abcdef)));
  EXPECT_TRUE(
      Covered(g.ranges, &__cudaFatCubinHandle, sizeof(__cudaFatCubinHandle)));
  EXPECT_FALSE(Covered(g.ranges, gmt_test_program_global, 8));
}

TEST(CudaRuntimeGlobals, EachSymbolTableIsReadOncePerProcess) {
  const uint64_t bias = ProgramLoadBias();
  const RuntimeGlobals first = FindCudaRuntimeGlobals("/proc/self/exe", bias);
  if (!first.symbols_read) GTEST_SKIP() << "no symbol table: " << first.note;
  const uint64_t tables = CudaRuntimeGlobalsTablesRead();
  // Asked again, at another load address: the same ranges, moved, from
  // the cache.
  const RuntimeGlobals again =
      FindCudaRuntimeGlobals("/proc/self/exe", bias + 0x10000);
  EXPECT_EQ(CudaRuntimeGlobalsTablesRead(), tables);
  EXPECT_TRUE(again.symbols_read);
  ASSERT_EQ(again.ranges.size(), first.ranges.size());
  for (size_t i = 0; i < first.ranges.size(); ++i) {
    EXPECT_EQ(again.ranges[i].begin, first.ranges[i].begin + 0x10000);
    EXPECT_EQ(again.ranges[i].end, first.ranges[i].end + 0x10000);
  }
}

TEST(CudaRuntimeGlobals, BadFilesGiveANoteNotACrash) {
  RuntimeGlobals g = FindCudaRuntimeGlobals("/nonexistent/module.so", 0);
  EXPECT_TRUE(g.ranges.empty());
  EXPECT_FALSE(g.note.empty());
  g = FindCudaRuntimeGlobals("/proc/self/status", 0);  // not ELF
  EXPECT_TRUE(g.ranges.empty());
  EXPECT_FALSE(g.note.empty());
}

}  // namespace
}  // namespace gmt
