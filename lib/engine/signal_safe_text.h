// Text built in a fixed buffer and written with write(2), for the fatal-signal
// path (crash_handler.cc, engine_crash.cc): no allocation, no stdio, no
// locale, no lock. A line longer than the buffer is cut.
#ifndef GMT_LIB_ENGINE_SIGNAL_SAFE_TEXT_H_
#define GMT_LIB_ENGINE_SIGNAL_SAFE_TEXT_H_

#include <errno.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace gmt {

class SignalSafeText {
 public:
  // `pid`: the process the "==<pid>==" prefix of Begin names.
  explicit SignalSafeText(int pid) : pid_(pid) {}

  SignalSafeText& Add(const char* text) {
    while (*text != '\0' && size_ < kCapacity) buffer_[size_++] = *text++;
    return *this;
  }
  SignalSafeText& Decimal(uint64_t value) { return Digits(value, 10, false); }
  SignalSafeText& Signed(int64_t value) {
    return value < 0 ? Digits(0 - static_cast<uint64_t>(value), 10, true)
                     : Digits(static_cast<uint64_t>(value), 10, false);
  }
  SignalSafeText& Hex(uint64_t value) {
    return Add("0x").Digits(value, 16, false);
  }
  // "==<pid>== gpumemtrace: ", the start of every line the tool prints.
  SignalSafeText& Begin() {
    return Add("==")
        .Decimal(static_cast<uint64_t>(pid_))
        .Add("== gpumemtrace: ");
  }
  // Ends the line, writes it whole (retrying short writes), and starts over.
  void WriteLine(int fd) {
    buffer_[size_++] = '\n';
    size_t done = 0;
    while (done < size_) {
      const ssize_t n = write(fd, buffer_ + done, size_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    size_ = 0;
  }

 private:
  static constexpr size_t kCapacity = 1023;  // one byte kept for the '\n'

  SignalSafeText& Digits(uint64_t value, unsigned base, bool negative) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[value % base];
      value /= base;
    } while (value != 0);
    if (negative) digits[n++] = '-';
    while (n > 0 && size_ < kCapacity) buffer_[size_++] = digits[--n];
    return *this;
  }

  int pid_;
  char buffer_[kCapacity + 1];
  size_t size_ = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_SIGNAL_SAFE_TEXT_H_
