#include "lib/stacks/python_frames.h"

#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
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

}  // namespace

int SplicePythonFrames(uintptr_t* frames, int count, int max_frames) {
  const PythonApi& api = Api();
  if (!api.usable || count >= max_frames || api.is_initialized() == 0 ||
      api.gil_check() != 1 ||
      (api.is_finalizing != nullptr && api.is_finalizing() != 0)) {
    return count;
  }
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
  while (frame != nullptr && n < max_frames) {
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
