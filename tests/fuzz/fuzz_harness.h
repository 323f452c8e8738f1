// What a fuzz harness here is: one libFuzzer entry point,
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
//
// that must not crash on any input and checks its own invariants with
// GMT_FUZZ_CHECK (a failed check prints why and aborts, so libFuzzer, the
// sanitizers and the corpus-replay driver all see a crash). Each harness is
// built two ways (tests/fuzz/CMakeLists.txt): as a libFuzzer target with clang
// (GMT_BUILD_FUZZERS=ON), and always as a GoogleTest program
// (fuzz_replay_main.cc) that replays the seed corpus and then mutates it for a
// few seconds.
#ifndef GMT_TESTS_FUZZ_FUZZ_HARNESS_H_
#define GMT_TESTS_FUZZ_FUZZ_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define GMT_FUZZ_CHECK(condition, ...)                                       \
  do {                                                                       \
    if (!(condition)) {                                                      \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n  ", __FILE__, \
                   __LINE__, #condition);                                    \
      std::fprintf(stderr, __VA_ARGS__);                                     \
      std::fprintf(stderr, "\n");                                            \
      std::abort();                                                          \
    }                                                                        \
  } while (0)

#endif  // GMT_TESTS_FUZZ_FUZZ_HARNESS_H_
