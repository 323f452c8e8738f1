// Python frames in host call stacks: the line of the script that made a
// tensor, next to the native frames of the framework that allocated it.
//
// A captured stack holds return addresses. A Python frame is stored among
// them as a tagged value (kPythonFrameTag | id) that no code address has;
// `id` names an interned (function, file, line). CPython 3.10 to 3.13 is
// found in the running process with dlsym (nothing is linked). A thread's
// frames are read from the interpreter's own structures, per version, with
// no call into Python and no reference taken, whether it holds the GIL or
// released it (as PyTorch's operators do before they allocate): its frames
// do not change while it is inside the call. Read through a per-thread cache
// by (code object, instruction), so a hot line costs a few loads. Where the
// running version's layout is not known, a thread that holds the GIL is
// read through the public C API instead (uncached).
#ifndef GMT_LIB_STACKS_PYTHON_FRAMES_H_
#define GMT_LIB_STACKS_PYTHON_FRAMES_H_

#include <climits>
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

// With `frames[0..count)` a native stack, innermost first: on a thread that
// runs Python code of an initialized interpreter (holding the GIL or having
// released it for this call), keeps the native frames up to the first one
// inside the interpreter itself, then the Python frames, innermost first, up
// to `max_frames` in all and `max_python_frames` of them; returns the new
// count. Anywhere else (no Python in
// the process, a thread without Python frames, the interpreter finalizing,
// a version without a known layout and no GIL) returns `count` with the
// frames untouched. Leaves any Python exception that was set as it was. Not
// async-signal-safe.
int SplicePythonFrames(uintptr_t* frames, int count, int max_frames,
                       int max_python_frames = INT_MAX);

// What a tagged frame stands for; false for an id never handed out.
bool LookUpPythonFrame(uintptr_t address, PythonFrameInfo* info);

}  // namespace gmt

#endif  // GMT_LIB_STACKS_PYTHON_FRAMES_H_
