#include "lib/stacks/python_frames.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "lib/core/log.h"
#include "lib/stacks/stack_capture.h"

namespace gmt {
namespace {

// The interpreter's public C API (and _Py_IsFinalizing, exported by every
// version that lacks the public Py_IsFinalizing of 3.13), as found in the
// process. Objects are opaque pointers here: no Python header is needed.
struct PythonApi {
  int (*is_initialized)() = nullptr;
  int (*gil_check)() = nullptr;
  int (*is_finalizing)() = nullptr;
  void* (*get_frame)() = nullptr;
  void* (*frame_get_back)(void*) = nullptr;
  void* (*frame_get_code)(void*) = nullptr;
  int (*frame_get_line)(void*) = nullptr;
  void* (*get_attr)(void*, const char*) = nullptr;
  const char* (*as_utf8)(void*) = nullptr;
  void (*incref)(void*) = nullptr;
  void (*decref)(void*) = nullptr;
  void (*err_fetch)(void**, void**, void**) = nullptr;
  void (*err_restore)(void*, void*, void*) = nullptr;
  // The interpreter's own code: native frames from here on are its loop.
  uintptr_t begin = 0;
  uintptr_t end = 0;
  bool usable = false;
};

template <typename Fn>
void Find(const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// Looked up once, at the first capture: a Python program has its
// interpreter loaded before any CUDA call. (A program that embeds Python
// later than its first capture gets native stacks only.)
const PythonApi& Api() {
  static const PythonApi api = [] {
    PythonApi a;
    Find("Py_IsInitialized", &a.is_initialized);
    if (a.is_initialized == nullptr) return a;  // no Python here
    Find("PyGILState_Check", &a.gil_check);
    Find("Py_IsFinalizing", &a.is_finalizing);
    if (a.is_finalizing == nullptr) Find("_Py_IsFinalizing", &a.is_finalizing);
    Find("PyEval_GetFrame", &a.get_frame);
    Find("PyFrame_GetBack", &a.frame_get_back);
    Find("PyFrame_GetCode", &a.frame_get_code);
    Find("PyFrame_GetLineNumber", &a.frame_get_line);
    Find("PyObject_GetAttrString", &a.get_attr);
    Find("PyUnicode_AsUTF8", &a.as_utf8);
    Find("Py_IncRef", &a.incref);
    Find("Py_DecRef", &a.decref);
    Find("PyErr_Fetch", &a.err_fetch);
    Find("PyErr_Restore", &a.err_restore);
    void* loop = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    if (loop == nullptr) loop = reinterpret_cast<void*>(a.get_frame);
    const bool range =
        loop != nullptr && ModuleTextRange(loop, &a.begin, &a.end);
    a.usable = range && a.gil_check != nullptr && a.get_frame != nullptr &&
               a.frame_get_back != nullptr && a.frame_get_code != nullptr &&
               a.frame_get_line != nullptr && a.get_attr != nullptr &&
               a.as_utf8 != nullptr && a.incref != nullptr &&
               a.decref != nullptr && a.err_fetch != nullptr &&
               a.err_restore != nullptr;
    if (!a.usable) {
      LogNote(1,
              "python stacks: CPython is in the process but %s; stacks stay "
              "native",
              !range ? "its interpreter loop's module was not found"
                     : "a function of its C API was not found");
    }
    return a;
  }();
  return api;
}

// Interned frames, by code object and line. The code objects are kept alive
// (one reference each, never given back), so an address never names two.
// Leaked: reports are written during exit.
constexpr size_t kMaxFrames = size_t{1} << 20;
ABSL_CONST_INIT absl::Mutex g_mu(absl::kConstInit);
struct Table {
  absl::flat_hash_map<std::pair<uintptr_t, int>, uint32_t> ids;
  std::vector<PythonFrameInfo> infos;  // id - 1
  // For frames read without the GIL, whose code objects are not kept alive:
  // the name objects an id was read from, so a hit costs two compares
  // instead of two string copies (a new code object at a freed one's
  // address has new name objects, or names of another length or start).
  struct Names {
    const void* function = nullptr;
    const void* file = nullptr;
    int64_t function_length = 0;
    int64_t file_length = 0;
    uint64_t function_head = 0;  // its first (up to) 8 characters
    bool operator==(const Names&) const = default;
  };
  absl::flat_hash_map<std::pair<uintptr_t, int>, Names> raw_names;
};
Table* g_table ABSL_GUARDED_BY(g_mu) = nullptr;

std::string AttrText(const PythonApi& api, void* object, const char* name) {
  void* attr = api.get_attr(object, name);
  if (attr == nullptr) return std::string();
  const char* text = api.as_utf8(attr);
  std::string out = text != nullptr ? text : "";
  api.decref(attr);
  return out;
}

// 0 when the table is full.
uint32_t Intern(const PythonApi& api, void* code, int line) {
  const std::pair<uintptr_t, int> key{reinterpret_cast<uintptr_t>(code), line};
  {
    absl::MutexLock lock(&g_mu);
    if (g_table != nullptr) {
      if (auto it = g_table->ids.find(key); it != g_table->ids.end()) {
        return it->second;
      }
      if (g_table->infos.size() >= kMaxFrames) return 0;
    }
  }
  // Outside the lock: these calls run Python code paths (this thread holds
  // the GIL, so no other thread is here at the same time).
  PythonFrameInfo info;
  info.function = AttrText(api, code, "co_qualname");  // 3.11 and later
  if (info.function.empty()) info.function = AttrText(api, code, "co_name");
  info.file = AttrText(api, code, "co_filename");
  info.line = line;
  absl::MutexLock lock(&g_mu);
  if (g_table == nullptr) g_table = new Table;
  auto [it, inserted] = g_table->ids.try_emplace(
      key, static_cast<uint32_t>(g_table->infos.size() + 1));
  if (inserted) {
    api.incref(code);
    g_table->infos.push_back(std::move(info));
  }
  return it->second;
}

// ---- Frames read from the interpreter's structures -------------------------
//
// A framework's operator releases the GIL before it allocates (PyTorch's do),
// so the allocating thread may not call the API above. Its frames are still
// where it left them: the thread is inside a C call, and no other thread
// changes them meanwhile (nor while it holds the GIL, when this path is used
// too: it is cached, the API's line lookup is not). They are read from the
// interpreter's own structures, with no call into Python and no reference taken
// (taking one without the GIL races with the threads that hold it). The layouts
// are CPython's, per version (x86-64 and aarch64: LP64), and every object read
// is checked against its type first. Versions without a layout here get no
// frames on such threads.

// The offsets of one CPython version (LP64), from its headers (offsetof
// under Py_BUILD_CORE), cross-checked against its own debug offsets (3.13)
// and py-spy's bindings, and walked on a live interpreter of each.
struct Offsets {
  unsigned long minor;
  // 3.10: the thread's frames are frame objects (PyThreadState.frame,
  // f_back, f_code, f_lasti in code units), each checked to be one.
  bool frame_objects;
  bool via_cframe;   // 3.11, 3.12: PyThreadState.cframe->current_frame
  int owner_cstack;  // frames pushed for a C entry (3.12+): no code; else -1
  size_t tstate_frame;
  size_t cframe_current;
  size_t frame_code;      // f_code, or f_executable (3.13)
  size_t frame_previous;  // previous, or f_back (3.10)
  size_t frame_instr;     // prev_instr, instr_ptr (3.13), f_lasti (3.10)
  size_t frame_owner;
  size_t code_filename;
  size_t code_qualname;  // co_qualname, or co_name (3.10 has no qualname)
  size_t code_first_traceable;
  size_t code_adaptive;  // co_code_adaptive: the instructions
  size_t ascii_header;   // sizeof(PyASCIIObject)
};

constexpr Offsets kOffsets[] = {
    // minor objects cframe cstack tstate cur code prev instr owner file
    //   name first adaptive ascii
    {10, true, false, -1, 24, 0, 32, 24, 96, 0, 104, 112, 0, 0, 48},
    {11, false, true, -1, 56, 8, 32, 48, 56, 69, 112, 128, 168, 184, 48},
    {12, false, true, 3, 56, 0, 0, 8, 56, 70, 112, 128, 176, 192, 40},
    {13, false, false, 3, 72, 0, 0, 8, 56, 70, 112, 128, 184, 200, 40},
};

struct RawLayout : Offsets {
  bool usable = false;
  const void* frame_type = nullptr;
  const void* code_type = nullptr;
  const void* unicode_type = nullptr;
  void* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState
  int (*addr2line)(void*, int) = nullptr;  // PyCode_Addr2Line
};

constexpr int kOwnedByGenerator = 1;  // FRAME_OWNED_BY_GENERATOR, 3.11-3.13

// The running interpreter's minor version (3.x), 0 when not 3.10 to 3.13's
// way of telling.
unsigned long RunningMinor() {
  if (const auto* version = reinterpret_cast<const unsigned long*>(
          dlsym(RTLD_DEFAULT, "Py_Version"))) {  // 3.11 and later
    return (*version >> 24) == 3 ? (*version >> 16) & 0xFF : 0;
  }
  const char* (*get_version)() = nullptr;
  Find("Py_GetVersion", &get_version);
  if (get_version == nullptr) return 0;
  const char* text = get_version();  // "3.10.13 (main, ...)"
  return text != nullptr && std::strncmp(text, "3.10.", 5) == 0 ? 10 : 0;
}

const RawLayout& Raw() {
  static const RawLayout layout = [] {
    RawLayout l{};
    const unsigned long minor = RunningMinor();
    const Offsets* known = nullptr;
    for (const Offsets& o : kOffsets) {
      if (o.minor == minor) known = &o;
    }
    if (known == nullptr) return l;
    static_cast<Offsets&>(l) = *known;
    if (l.frame_objects) l.frame_type = dlsym(RTLD_DEFAULT, "PyFrame_Type");
    l.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    l.unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    Find("PyGILState_GetThisThreadState", &l.this_thread_state);
    Find("PyCode_Addr2Line", &l.addr2line);
    l.usable = l.code_type != nullptr && l.unicode_type != nullptr &&
               l.this_thread_state != nullptr && l.addr2line != nullptr &&
               (!l.frame_objects || l.frame_type != nullptr);
    LogNote(1,
            "python stacks: CPython 3.%lu; frames are %s from the "
            "interpreter's structures",
            minor, l.usable ? "read" : "not read");
    return l;
  }();
  return layout;
}

template <typename T>
T Field(const void* object, size_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(object) + offset, sizeof(T));
  return value;
}

const void* TypeOf(const void* object) {
  return Field<const void*>(object, 8);  // ob_type, after ob_refcnt
}

// A compact ASCII str's text (file and function names are); empty for any
// other object.
std::string AsciiText(const RawLayout& l, const void* object) {
  if (object == nullptr || TypeOf(object) != l.unicode_type) return {};
  const int64_t length = Field<int64_t>(object, 16);
  const uint32_t state = Field<uint32_t>(object, 32);
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (!compact || !ascii || length < 0 || length > 4096) return {};
  return std::string(static_cast<const char*>(object) + l.ascii_header,
                     static_cast<size_t>(length));
}

// The names of `code` as InternRaw and FrameId compare them.
Table::Names NamesOf(const RawLayout& l, const void* code) {
  Table::Names names;
  names.function = Field<const void*>(code, l.code_qualname);
  names.file = Field<const void*>(code, l.code_filename);
  const auto length = [&](const void* object) -> int64_t {
    return object != nullptr && TypeOf(object) == l.unicode_type
               ? Field<int64_t>(object, 16)
               : -1;
  };
  names.function_length = length(names.function);
  names.file_length = length(names.file);
  if (names.function_length > 0) {
    std::memcpy(
        &names.function_head,
        static_cast<const char*>(names.function) + l.ascii_header,
        static_cast<size_t>(std::min<int64_t>(names.function_length, 8)));
  }
  return names;
}

// Interns (code, line) for a thread without the GIL: the code object is not
// kept alive (that would take a reference), so an address may come to name
// another function; a cached entry is used only if its names still match.
uint32_t InternRaw(const RawLayout& l, const void* code, int line,
                   const Table::Names& names) {
  const std::pair<uintptr_t, int> key{reinterpret_cast<uintptr_t>(code), line};
  absl::MutexLock lock(&g_mu);
  if (g_table == nullptr) g_table = new Table;
  if (auto it = g_table->raw_names.find(key);
      it != g_table->raw_names.end() && it->second == names) {
    if (auto id = g_table->ids.find(key); id != g_table->ids.end()) {
      return id->second;
    }
  }
  PythonFrameInfo info;
  info.function = AsciiText(l, names.function);
  info.file = AsciiText(l, names.file);
  info.line = line;
  if (info.function.empty() && info.file.empty()) return 0;
  if (g_table->infos.size() >= kMaxFrames) return 0;
  g_table->infos.push_back(std::move(info));
  const uint32_t id = static_cast<uint32_t>(g_table->infos.size());
  g_table->ids[key] = id;
  g_table->raw_names[key] = names;
  return id;
}

// A thread's last answers of FrameId, by (code object, instruction offset):
// a training loop allocates from the same few lines again and again, and a
// hit costs a few loads instead of PyCode_Addr2Line (a walk of the line
// table) and the global table's lock. Each entry keeps the names it was made
// with; a code object freed and another made at its address is told apart by
// them, as in InternRaw.
struct FrameIdCacheEntry {
  const void* code = nullptr;
  int offset = -1;
  uint32_t id = 0;
  Table::Names names;
};
constexpr size_t kFrameIdCacheSize = 128;  // a power of two
// On the heap, made at a thread's first Python frame: the library's TLS
// block must stay small, since it goes into the static TLS that glibc has
// little of left when libcuda dlopens the library (CUDA_INJECTION64_PATH),
// and one initial-exec variable (lib/core/intercept_depth.h) puts the whole
// block there.
thread_local std::unique_ptr<FrameIdCacheEntry[]> t_frame_ids;

// This thread's cache, made at its first use; nullptr if it cannot be.
FrameIdCacheEntry* FrameIdCache() {
  if (t_frame_ids == nullptr) {
    t_frame_ids.reset(new (std::nothrow) FrameIdCacheEntry[kFrameIdCacheSize]);
  }
  return t_frame_ids.get();
}

// The interned id of `code` at instruction byte offset `offset`, 0 if none,
// through `cache` (FrameIdCache()) when there is one.
uint32_t FrameId(const RawLayout& l, FrameIdCacheEntry* cache, const void* code,
                 int offset) {
  const Table::Names names = NamesOf(l, code);
  if (cache == nullptr) {
    return InternRaw(l, code, l.addr2line(const_cast<void*>(code), offset),
                     names);
  }
  const auto key = reinterpret_cast<uintptr_t>(code);
  FrameIdCacheEntry& e = cache[((key >> 4) ^ (key >> 12) ^
                                static_cast<uintptr_t>(offset) * 0x9E3779B1u) &
                               (kFrameIdCacheSize - 1)];
  if (e.code == code && e.offset == offset && e.names == names) return e.id;
  const int line = l.addr2line(const_cast<void*>(code), offset);
  const uint32_t id = InternRaw(l, code, line, names);
  e = FrameIdCacheEntry{code, offset, id, names};
  return id;
}

// Appends this thread's Python frames, innermost first, from frames[n] up to
// max_frames; returns the new count.
int AppendInterpreterFrames(const RawLayout& l, uintptr_t* frames, int n,
                            int max_frames) {
  const void* tstate = l.this_thread_state();
  if (tstate == nullptr) return n;  // a thread Python never ran on
  const void* frame = Field<const void*>(tstate, l.tstate_frame);
  FrameIdCacheEntry* const cache = FrameIdCache();
  if (l.via_cframe) {
    // The C frame of the interpreter loop that runs this thread's Python:
    // on this thread's stack, above this call (a check that the layout is
    // the running interpreter's before anything is read through it).
    const char here = 0;
    const auto at = reinterpret_cast<uintptr_t>(frame);
    const auto sp = reinterpret_cast<uintptr_t>(&here);
    if (at <= sp || at - sp > (uintptr_t{256} << 20)) return n;
    frame = Field<const void*>(frame, l.cframe_current);
  }
  for (int walked = 0; frame != nullptr && n < max_frames && walked < 4096;
       ++walked) {
    if (l.frame_objects) {
      if (TypeOf(frame) != l.frame_type) break;
      const void* code = Field<const void*>(frame, l.frame_code);
      if (code != nullptr && TypeOf(code) == l.code_type) {
        const int lasti = Field<int>(frame, l.frame_instr);
        if (const uint32_t id = FrameId(l, cache, code, lasti * 2); id != 0) {
          frames[n++] = kPythonFrameTag | id;
        }
      }
      frame = Field<const void*>(frame, l.frame_previous);
      continue;
    }
    const int owner = Field<uint8_t>(frame, l.frame_owner);
    const void* code = Field<const void*>(frame, l.frame_code);
    if (owner != l.owner_cstack && code != nullptr &&
        TypeOf(code) == l.code_type) {
      const char* instructions =
          static_cast<const char*>(code) + l.code_adaptive;
      const char* instr = Field<const char*>(frame, l.frame_instr);
      const int first = Field<int>(code, l.code_first_traceable);
      // A frame still being set up has no line yet (_PyFrame_IsIncomplete).
      const bool incomplete = owner != kOwnedByGenerator &&
                              instr < instructions + 2 * int64_t{first};
      if (!incomplete) {
        if (const uint32_t id =
                FrameId(l, cache, code, static_cast<int>(instr - instructions));
            id != 0) {
          frames[n++] = kPythonFrameTag | id;
        }
      }
    }
    frame = Field<const void*>(frame, l.frame_previous);
  }
  return n;
}

// Where the Python frames spliced in after `n` native ones end: at
// `max_frames` in all, `max_python` of them at most (without overflow).
int PythonLimit(int n, int max_frames, int max_python) {
  return max_python >= max_frames - n ? max_frames : n + max_python;
}

}  // namespace

int SplicePythonFrames(uintptr_t* frames, int count, int max_frames,
                       int max_python_frames) {
  const PythonApi& api = Api();
  if (!api.usable || count >= max_frames || api.is_initialized() == 0 ||
      (api.is_finalizing != nullptr && api.is_finalizing() != 0)) {
    return count;
  }
  // The thread's frames read from the interpreter's structures, through the
  // per-thread cache, whether or not it holds the GIL: a thread that holds
  // it (a tensor freed by Python's deallocator, a launch from a C extension
  // that kept it) would otherwise pay, per frame, the C API's line lookup (a
  // walk of the line table) and the global table's lock: on the H200 that
  // made Python frames a third of tensor mode's cost in a CNN's step. The
  // C API below is the fallback where the running interpreter's layout is
  // not known.
  if (const RawLayout& raw = Raw(); raw.usable) {
    int n = 0;
    while (n < count && (frames[n] < api.begin || frames[n] >= api.end)) ++n;
    const int spliced = AppendInterpreterFrames(
        raw, frames, n, PythonLimit(n, max_frames, max_python_frames));
    return spliced == n ? count : spliced;
  }
  if (api.gil_check() != 1) return count;
  void* frame = api.get_frame();  // borrowed
  if (frame == nullptr) return count;
  int n = 0;
  while (n < count && (frames[n] < api.begin || frames[n] >= api.end)) ++n;
  // Reading names may raise (and clear) an error of its own: the program's
  // pending exception, if any, is put back as it was.
  void* type = nullptr;
  void* value = nullptr;
  void* traceback = nullptr;
  api.err_fetch(&type, &value, &traceback);
  api.incref(frame);
  const int limit = PythonLimit(n, max_frames, max_python_frames);
  while (frame != nullptr && n < limit) {
    void* code = api.frame_get_code(frame);  // new reference
    const int line = api.frame_get_line(frame);
    if (code != nullptr) {
      if (const uint32_t id = Intern(api, code, line); id != 0) {
        frames[n++] = kPythonFrameTag | id;
      }
      api.decref(code);
    }
    void* back = api.frame_get_back(frame);  // new reference
    api.decref(frame);
    frame = back;
  }
  if (frame != nullptr) api.decref(frame);
  api.err_restore(type, value, traceback);
  return n;
}

bool LookUpPythonFrame(uintptr_t address, PythonFrameInfo* info) {
  if (!IsPythonFrame(address)) return false;
  const uintptr_t id = address & ~kPythonFrameTag;
  absl::MutexLock lock(&g_mu);
  if (g_table == nullptr || id == 0 || id > g_table->infos.size()) {
    return false;
  }
  *info = g_table->infos[id - 1];
  return true;
}

}  // namespace gmt
