// Python frames in host call stacks: the line of the script that made a
// tensor, next to the native frames of the framework that allocated it.
//
// A captured stack holds return addresses. A Python frame is stored among
// them as a tagged value (kPythonFrameTag | id) that no code address has;
// `id` names an interned (function, file, line). The interpreter is reached
// in-process through its public C API, found with dlsym in the running
// process (CPython 3.10 to 3.13; nothing is linked), and only on a thread
// that holds the GIL, so the frames are consistent and the calls are allowed.
#ifndef GMT_LIB_STACKS_PYTHON_FRAMES_H_
#define GMT_LIB_STACKS_PYTHON_FRAMES_H_

#include <cstdint>
#include <string>

namespace gmt {

// The top 16 bits of a user-space x86-64/aarch64 code address are zero.
inline constexpr uintptr_t kPythonFrameTag = uintptr_t{0xFFFE} << 48;

inline bool IsPythonFrame(uintptr_t address) {
  return (address >> 48) == (kPythonFrameTag >> 48);
}

struct PythonFrameInfo {
  std::string function;  // the code object's qualified name ("Model.build")
  std::string file;      // co_filename
  int line = 0;
};

// With `frames[0..count)` a native stack, innermost first: where this thread
// holds the GIL of an initialized interpreter, keeps the native frames up to
// the first one inside the interpreter itself, then the Python frames,
// innermost first, up to `max_frames` in all; returns the new count.
// Anywhere else (no Python in the process, the GIL not held, the interpreter
// finalizing) returns `count` with the frames untouched. Leaves any Python
// exception that was set as it was. Not async-signal-safe.
int SplicePythonFrames(uintptr_t* frames, int count, int max_frames);

// What a tagged frame stands for; false for an id never handed out.
bool LookUpPythonFrame(uintptr_t address, PythonFrameInfo* info);

}  // namespace gmt

#endif  // GMT_LIB_STACKS_PYTHON_FRAMES_H_
