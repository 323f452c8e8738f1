// The tool's own messages (not reports): one line each on stderr, prefixed with
// "==<pid>== gpumemtrace: ". Formats into a stack buffer and write()s it, so it
// is safe from any wrapper, under any lock, and does not allocate.
#ifndef GMT_LIB_CORE_LOG_H_
#define GMT_LIB_CORE_LOG_H_

namespace gmt {

// An error in the tool's input or environment (bad option, unwritable path).
void LogError(const char* format, ...) __attribute__((format(printf, 1, 2)));
// A note shown when GMT_OPTIONS verbosity >= level.
void LogNote(int level, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
// Writes raw bytes to stderr, retrying short writes.
void WriteStderr(const char* data, unsigned long size);

}  // namespace gmt

#endif  // GMT_LIB_CORE_LOG_H_
