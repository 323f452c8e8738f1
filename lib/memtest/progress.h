// Progress of a memtest run on stderr: a redrawn bar on a terminal, plain
// lines (one per finished pattern) otherwise, so logs stay readable.
#ifndef GMT_LIB_MEMTEST_PROGRESS_H_
#define GMT_LIB_MEMTEST_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"

namespace gmt::memtest {

struct ProgressState {
  double fraction = 0;     // of all steps, [0, 1]
  absl::string_view test;  // the pattern now running
  int pass = 0;
  double gbps = 0;      // tested GB/s of the pattern so far
  uint64_t errors = 0;  // mismatched words so far, all patterns
};

// "[#########...........]  45.0%  movinv pass 0  2034.5 GB/s  errors 0",
// the bar `width` characters between the brackets.
std::string FormatProgressBar(const ProgressState& s, int width);

class Progress {
 public:
  // `bar`: redraw one line with '\r' (a terminal); else print lines.
  // `out` null: silent.
  Progress(std::FILE* out, bool bar) : out_(out), bar_(bar) {}
  // After each step.
  void Update(const ProgressState& s);
  // When a pattern's pass finished (the line in line mode).
  void TestDone(const ProgressState& s);
  // Ends the bar's line.
  void Finish();

 private:
  std::FILE* out_;
  bool bar_;
  bool drawn_ = false;
};

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_PROGRESS_H_
