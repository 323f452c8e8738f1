#include "lib/memtest/progress.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace gmt::memtest {

std::string FormatProgressBar(const ProgressState& s, int width) {
  const double f = std::clamp(s.fraction, 0.0, 1.0);
  const int filled = static_cast<int>(f * width + 1e-9);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '.');
  return absl::StrFormat("[%s] %5.1f%%  %s pass %d  %.1f GB/s  errors %d", bar,
                         f * 100, s.test, s.pass, s.gbps, s.errors);
}

void Progress::Update(const ProgressState& s) {
  if (out_ == nullptr || !bar_) return;
  // Trailing blanks wipe a longer previous line.
  std::fprintf(out_, "\r%s    ", FormatProgressBar(s, 30).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void Progress::TestDone(const ProgressState& s) {
  if (out_ == nullptr || bar_) {
    Update(s);
    return;
  }
  std::fprintf(
      out_, "memtest: %5.1f%% %s pass %d done, %.1f GB/s, errors %llu\n",
      std::clamp(s.fraction, 0.0, 1.0) * 100, std::string(s.test).c_str(),
      s.pass, s.gbps, static_cast<unsigned long long>(s.errors));
  std::fflush(out_);
}

void Progress::Finish() {
  if (out_ != nullptr && bar_ && drawn_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  drawn_ = false;
}

}  // namespace gmt::memtest
