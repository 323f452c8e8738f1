#include "lib/core/log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>

#include "lib/core/options.h"

namespace gmt {
namespace {

void VLog(const char* kind, const char* format, va_list args) {
  char buffer[1024];
  int n = snprintf(buffer, sizeof(buffer), "==%d== gpumemtrace: %s", getpid(),
                   kind);
  if (n < 0) return;
  size_t used =
      static_cast<size_t>(n) < sizeof(buffer) ? n : sizeof(buffer) - 1;
  int m = vsnprintf(buffer + used, sizeof(buffer) - used, format, args);
  if (m > 0) used += static_cast<size_t>(m);
  if (used > sizeof(buffer) - 2) used = sizeof(buffer) - 2;
  buffer[used++] = '\n';
  WriteStderr(buffer, used);
}

}  // namespace

void WriteStderr(const char* data, unsigned long size) {
  while (size > 0) {
    ssize_t written = write(STDERR_FILENO, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += written;
    size -= static_cast<unsigned long>(written);
  }
}

void LogError(const char* format, ...) {
  va_list args;
  va_start(args, format);
  VLog("error: ", format, args);
  va_end(args);
}

void LogNote(int level, const char* format, ...) {
  if (GlobalOptions().verbosity < level) return;
  va_list args;
  va_start(args, format);
  VLog("", format, args);
  va_end(args);
}

}  // namespace gmt
