// The memtest's tests (walking ones, walking zeros, own address, moving
// inversions, modulo-20, random) and the kernel steps each one runs.
//
// A test is a list of steps over the whole tested region: a write sweep of a
// pattern, or a verify sweep (optionally rewriting each checked word, for the
// moving inversions). The steps are a pure function of (test, pass, seed), so
// the host, the CPU tests and the report agree on what was written where:
//
//   walking1   write W1(shift=pass), verify           1 verified sweep
//   walking0   write W0(shift=pass), verify           1
//   address    write addr, verify; write ~addr, verify 2
//   movinv     write P; verify P, write ~P upwards; verify ~P, write P
//              downwards; verify P                     3
//   mod20      for o in 0..19: write (P at index%20==o, ~P elsewhere), verify
//                                                      20
//   random     write Mix64(seed'+index), verify        1
//
// P is 0x5555555555555555 in pass 0 and a seeded random constant in later
// passes; seed' = seed + pass.
#ifndef GMT_LIB_MEMTEST_PLAN_H_
#define GMT_LIB_MEMTEST_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/memtest_abi.h"

namespace gmt::memtest {

enum class Test { kWalking1, kWalking0, kAddress, kMovinv, kMod20, kRandom };

// "walking1", "walking0", "address", "movinv", "mod20", "random".
absl::string_view TestName(Test test);
std::optional<Test> TestFromName(absl::string_view name);
// Every test, in the order above (the default run).
std::vector<Test> AllTests();

// "all", or names separated by commas ("walking1,random"); no duplicates.
// The error names the bad entry and lists the valid ones.
absl::StatusOr<std::vector<Test>> ParseTestList(absl::string_view text);

struct Step {
  enum Kind { kWrite, kVerify } kind;
  GmtMemtestPattern pattern;  // written, or expected
  GmtMemtestPattern next;     // rewrite value (flags & GMT_MEMTEST_REWRITE)
  uint32_t flags = 0;         // GMT_MEMTEST_REWRITE | GMT_MEMTEST_DESCENDING
};

std::vector<Step> PlanTest(Test test, int pass, uint64_t seed);

// Verify steps in PlanTest(test, ...): how many times each byte is tested.
int VerifySweeps(Test test);

// "W1 shift=3", "const 0x5555555555555555", ... for messages and the report.
std::string DescribePattern(const GmtMemtestPattern& p);

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_PLAN_H_
