// Symbolizer: return addresses captured in this binary resolve to this file's
// functions, lines and module; IsCudaInternalFrame tells CUDA's own frames.
//
// Built with -g and without sibling-call optimisation (see CMakeLists.txt), so
// the noinline functions below keep their frames and line tables.
#include "lib/stacks/symbolizer.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/stacks/stack_capture.h"
#include "tests/unit/runtime_header_stand_in/cuda_runtime.h"

namespace gmt {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

// The line of the CaptureStack call in the leaf below, for the file:line
// check: noted by the same macro expansion that makes the call.
int g_capture_line = 0;
#define CAPTURE_NOTING_LINE(frames, max) \
  (g_capture_line = __LINE__, CaptureStack(frames, max))

__attribute__((noinline)) int CaptureInSymbolizerTestLeaf(uintptr_t* frames,
                                                          int max) {
  asm volatile("" ::: "memory");
  int n = CAPTURE_NOTING_LINE(frames, max);
  asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
  return n;
}

__attribute__((noinline)) int CaptureInSymbolizerTestMiddle(uintptr_t* frames,
                                                            int max) {
  int n = CaptureInSymbolizerTestLeaf(frames, max);
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int CaptureInSymbolizerTestOuter(uintptr_t* frames,
                                                           int max) {
  int n = CaptureInSymbolizerTestMiddle(frames, max);
  asm volatile("" ::: "memory");
  return n;
}

// The program's lines around a CUDA runtime header's wrapper.
int g_inlined_wrapper_line = 0;
int g_outlined_wrapper_line = 0;

__attribute__((noinline)) int CaptureThroughInlinedRuntimeWrapper(
    uintptr_t* frames, int max) {
  // clang-format off
  int n = (g_inlined_wrapper_line = __LINE__, InlinedRuntimeWrapper(frames, max));
  // clang-format on
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int CaptureThroughOutlinedRuntimeWrapper(
    uintptr_t* frames, int max) {
  // clang-format off
  int n = (g_outlined_wrapper_line = __LINE__, OutlinedRuntimeWrapper(frames, max));
  // clang-format on
  asm volatile("" ::: "memory");
  return n;
}

std::string ProgramBasename() {
  char buffer[4096];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "";
  buffer[n] = '\0';
  std::string path(buffer);
  return path.substr(path.rfind('/') + 1);
}

int OpenFdCount() {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

TEST(SymbolizerTest, ResolvesANoinlineFunctionOfThisBinary) {
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureInSymbolizerTestLeaf(frames, 8);
  ASSERT_GE(n, 1);
  Symbolizer symbolizer;
  SymbolizedFrame f = symbolizer.Symbolize(frames[0]);
  EXPECT_EQ(f.address, frames[0]);
  EXPECT_THAT(f.function, HasSubstr("CaptureInSymbolizerTestLeaf"));
  EXPECT_EQ(f.module, ProgramBasename());
}

TEST(SymbolizerTest, FileAndLineWithLibdw) {
  Symbolizer symbolizer;
  ASSERT_TRUE(symbolizer.HasLineInfo())
      << "libdw.so.1 is installed here (libdw1): it must load";
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureInSymbolizerTestLeaf(frames, 8);
  ASSERT_GE(n, 1);
  SymbolizedFrame f = symbolizer.Symbolize(frames[0]);
  EXPECT_THAT(f.file, EndsWith("symbolizer_test.cc"));
  EXPECT_GT(f.line, 0);
  // The call itself, not the line after it: Symbolize looks up address - 1.
  EXPECT_EQ(f.line, g_capture_line);
}

TEST(SymbolizerTest, CachedAnswerIsTheSame) {
  uintptr_t frames[kMaxStackFrames];
  ASSERT_GE(CaptureInSymbolizerTestLeaf(frames, 8), 1);
  Symbolizer symbolizer;
  SymbolizedFrame a = symbolizer.Symbolize(frames[0]);
  SymbolizedFrame b = symbolizer.Symbolize(frames[0]);
  EXPECT_EQ(a.function, b.function);
  EXPECT_EQ(a.file, b.file);
  EXPECT_EQ(a.line, b.line);
  EXPECT_EQ(a.module, b.module);
}

TEST(SymbolizerTest, CapturedChainSymbolizesInnermostFirst) {
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureInSymbolizerTestOuter(frames, 16);
  ASSERT_GE(n, 4);
  Symbolizer symbolizer;
  std::vector<SymbolizedFrame> stack =
      symbolizer.SymbolizeStack(StackView(frames, static_cast<size_t>(n)));
  ASSERT_GE(stack.size(), 4u);
  EXPECT_THAT(stack[0].function, HasSubstr("CaptureInSymbolizerTestLeaf"));
  EXPECT_THAT(stack[1].function, HasSubstr("CaptureInSymbolizerTestMiddle"));
  EXPECT_THAT(stack[2].function, HasSubstr("CaptureInSymbolizerTestOuter"));
  EXPECT_THAT(stack[3].function, HasSubstr("SymbolizerTest"));
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(stack[i].file, EndsWith("symbolizer_test.cc")) << i;
    EXPECT_EQ(stack[i].module, ProgramBasename()) << i;
  }
}

TEST(SymbolizerTest, CaptureHonoursMaxFrames) {
  uintptr_t frames[kMaxStackFrames];
  EXPECT_EQ(CaptureInSymbolizerTestOuter(frames, 2), 2);
  EXPECT_EQ(CaptureInSymbolizerTestOuter(frames, 0), 0);
  EXPECT_LE(CaptureInSymbolizerTestOuter(frames, 1000), kMaxStackFrames);
}

TEST(SymbolizerTest, ToolTextRangeFramesAreDropped) {
  // Declare this binary's text "the tool's own": the frames in it are then
  // dropped from the innermost end, leaving libc's and the loader's.
  uintptr_t begin = 0, end = 0;
  ASSERT_TRUE(ModuleTextRange(
      reinterpret_cast<const void*>(&CaptureInSymbolizerTestLeaf), &begin,
      &end));
  EXPECT_LE(begin, reinterpret_cast<uintptr_t>(&CaptureInSymbolizerTestLeaf));
  EXPECT_GT(end, reinterpret_cast<uintptr_t>(&CaptureInSymbolizerTestLeaf));
  SetToolTextRange(begin, end);
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureInSymbolizerTestOuter(frames, 16);
  SetToolTextRange(0, 0);
  for (int i = 0; i < n; ++i) {
    if (frames[i] >= begin && frames[i] < end) {
      // Only frames past the first foreign one may be ours (main calls
      // __libc_start_call_main which calls main...).
      EXPECT_GT(i, 0);
    }
  }
  if (n > 0) {
    EXPECT_FALSE(frames[0] >= begin && frames[0] < end);
  }
}

TEST(SymbolizerTest, UnknownAddressGivesEmptyNamesNotACrash) {
  Symbolizer symbolizer;
  SymbolizedFrame f = symbolizer.Symbolize(0x10);
  EXPECT_EQ(f.address, 0x10u);
  EXPECT_TRUE(f.function.empty());
  EXPECT_EQ(f.line, 0);
}

// A Symbolizer is an ordinary object (the Engine holds one; tests and the
// snapshot API make their own): destroying it must give back what it opened.
TEST(SymbolizerTest, DestroyedSymbolizersDoNotLeakFileDescriptors) {
  uintptr_t frames[kMaxStackFrames];
  ASSERT_GE(CaptureInSymbolizerTestLeaf(frames, 8), 1);
  {
    Symbolizer warm;  // loads libdw once, outside the count
    warm.Symbolize(frames[0]);
  }
  const int before = OpenFdCount();
  for (int i = 0; i < 50; ++i) {
    Symbolizer s;
    s.Symbolize(frames[0]);
  }
  const int after = OpenFdCount();
  EXPECT_LE(after, before + 2)
      << "open file descriptors grew from " << before << " to " << after
      << " over 50 Symbolizer lifetimes";
}

SymbolizedFrame Frame(const std::string& function, const std::string& module) {
  SymbolizedFrame f;
  f.function = function;
  f.module = module;
  return f;
}

TEST(IsCudaInternalFrameTest, Cases) {
  struct Case {
    const char* function;
    const char* module;
    bool internal;
  };
  for (const Case& c : std::vector<Case>{
           // Shared runtime and driver, by module.
           {"", "libcudart.so.13", true},
           {"cudaMalloc", "libcudart.so.12.4.127", true},
           {"anything", "libcuda.so.1", true},
           {"", "libcuda.so", true},
           // Statically linked cudart, by symbol.
           {"cudart::contextState::allocate(void**, unsigned long)", "app",
            true},
           {"__cudart1234", "app", true},
           {"libcudart_static_4d8d2d3c", "app", true},
           {"cudaMalloc", "app", true},
           {"cudaFreeHost", "app", true},
           // The program's own code.
           {"main", "app", false},
           {"cudaMalloc<float>(float**, unsigned long)", "app", false},
           {"cuda_helper", "app", false},
           {"cudax", "app", false},
           {"cuda", "app", false},
           {"", "", false},
           {"at::native::empty_cuda(...)", "libtorch_cuda.so", false},
           {"cudnnCreate", "libcudnn.so.9", false},
           {"cublasCreate_v2", "libcublas.so.13", false},
           {"foo", "libcudadevrt.so", false},
       }) {
    EXPECT_EQ(IsCudaInternalFrame(Frame(c.function, c.module)), c.internal)
        << "function '" << c.function << "' module '" << c.module << "'";
  }
}

// SymbolizeStack keeps the program's frames in order and stops at main (the
// C library's start-up code below it is noise); with no CUDA frames at the
// innermost end, nothing is dropped there.
TEST(SymbolizeStackTest, KeepsProgramFramesAndStopsAtMain) {
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureInSymbolizerTestOuter(frames, kMaxStackFrames);
  ASSERT_GT(n, 4);
  Symbolizer symbolizer;
  std::string all;
  int main_index = -1;
  for (int i = 0; i < n; ++i) {
    SymbolizedFrame f = symbolizer.Symbolize(frames[i]);
    if (f.function == "main" && main_index < 0) main_index = i;
    all += "  #" + std::to_string(i) + " " + f.function + " (" + f.module +
           ")" + (IsCudaInternalFrame(f) ? " [cuda-internal]" : "") + "\n";
  }
  ASSERT_GE(main_index, 3) << all;
  std::vector<SymbolizedFrame> stack =
      symbolizer.SymbolizeStack(StackView(frames, size_t(n)));
  ASSERT_EQ(stack.size(), size_t(main_index + 1)) << all;
  EXPECT_THAT(stack.front().function, HasSubstr("CaptureInSymbolizerTestLeaf"));
  EXPECT_EQ(stack.back().function, "main");
  EXPECT_TRUE(symbolizer.SymbolizeStack(StackView()).empty());
}

// A stack that never reaches main (a thread's stack) is kept whole.
TEST(SymbolizeStackTest, ThreadStackWithoutMainIsKept) {
  uintptr_t frames[kMaxStackFrames];
  int n = 0;
  std::thread t([&] { n = CaptureInSymbolizerTestOuter(frames, 32); });
  t.join();
  ASSERT_GT(n, 3);
  Symbolizer symbolizer;
  std::vector<SymbolizedFrame> stack =
      symbolizer.SymbolizeStack(StackView(frames, size_t(n)));
  EXPECT_EQ(stack.size(), size_t(n));
  EXPECT_THAT(stack.front().function, HasSubstr("CaptureInSymbolizerTestLeaf"));
}

// A stack taken inside an inlined wrapper of a CUDA runtime header
// (cudaMalloc<T> in the toolkit's cuda_runtime.h) names the program's line
// that called the wrapper, not the header's.
TEST(SymbolizerTest, InlinedRuntimeHeaderWrapperNamesTheProgramsLine) {
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureThroughInlinedRuntimeWrapper(frames, kMaxStackFrames);
  ASSERT_GT(n, 1);
  Symbolizer symbolizer;
  if (!symbolizer.HasLineInfo()) GTEST_SKIP() << "no libdw.so.1";
  SymbolizedFrame f = symbolizer.Symbolize(frames[0]);
  EXPECT_THAT(f.function, HasSubstr("CaptureThroughInlinedRuntimeWrapper"));
  EXPECT_THAT(f.file, EndsWith("symbolizer_test.cc"));
  EXPECT_EQ(f.line, g_inlined_wrapper_line);
}

// Not inlined (-O0), the wrapper is a frame of its own in the header: it is
// dropped like the runtime's own frames, and the program's frame comes first.
TEST(SymbolizeStackTest, OutlinedRuntimeHeaderWrapperIsDropped) {
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureThroughOutlinedRuntimeWrapper(frames, kMaxStackFrames);
  ASSERT_GT(n, 2);
  Symbolizer symbolizer;
  if (!symbolizer.HasLineInfo()) GTEST_SKIP() << "no libdw.so.1";
  std::vector<SymbolizedFrame> stack =
      symbolizer.SymbolizeStack(StackView(frames, static_cast<size_t>(n)));
  ASSERT_FALSE(stack.empty());
  EXPECT_THAT(stack[0].function,
              HasSubstr("CaptureThroughOutlinedRuntimeWrapper"));
  EXPECT_EQ(stack[0].line, g_outlined_wrapper_line);
}

TEST(IsCudaRuntimeHeaderTest, Cases) {
  EXPECT_TRUE(IsCudaRuntimeHeader(
      "/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda_runtime.h"));
  EXPECT_TRUE(IsCudaRuntimeHeader("/opt/cuda/include/cuda_runtime_api.h"));
  EXPECT_TRUE(IsCudaRuntimeHeader("cuda_runtime.h"));
  // nvcc's launch helper (CUDA 13), inlined into every kernel<<<...>>>.
  EXPECT_TRUE(IsCudaRuntimeHeader(
      "/usr/local/cuda/bin/../targets/x86_64-linux/include/crt/"
      "device_functions.h"));
  EXPECT_FALSE(IsCudaRuntimeHeader("/home/me/app/cuda_runtime_helpers.h"));
  EXPECT_FALSE(IsCudaRuntimeHeader("/home/me/app/crt/helpers.h"));
  EXPECT_FALSE(IsCudaRuntimeHeader("/home/me/app/main.cu"));
  EXPECT_FALSE(IsCudaRuntimeHeader(""));
}

}  // namespace
}  // namespace gmt
