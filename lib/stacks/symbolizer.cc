#include "lib/stacks/symbolizer.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/debugging/symbolize.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/core/optional_library.h"
#include "lib/stacks/python_frames.h"

namespace gmt {

std::string FrameSiteText(const SymbolizedFrame& f) {
  return f.file.empty()
             ? f.function
             : absl::StrCat(f.function, " (", f.file, ":", f.line, ")");
}

// The libdwfl entry points we use, resolved from libdw.so.1 at run time.
struct Symbolizer::DwflApi {
  decltype(&dwfl_begin) begin;
  decltype(&dwfl_linux_proc_report) linux_proc_report;
  decltype(&dwfl_report_begin) report_begin;
  decltype(&dwfl_report_end) report_end;
  decltype(&dwfl_addrmodule) addrmodule;
  decltype(&dwfl_module_getsrc) module_getsrc;
  decltype(&dwfl_lineinfo) lineinfo;
  decltype(&dwfl_module_addrname) module_addrname;
  decltype(&dwfl_linux_proc_find_elf) linux_proc_find_elf;
  decltype(&dwfl_standard_find_debuginfo) standard_find_debuginfo;
  decltype(&dwfl_offline_section_address) offline_section_address;
  decltype(&dwfl_end) end;
  Dwfl_Callbacks callbacks;
  // Inline chains (optional: without them a line inside a CUDA runtime
  // header stays as the line table gives it).
  decltype(&dwfl_module_addrdie) module_addrdie = nullptr;
  decltype(&dwarf_getscopes) getscopes = nullptr;
  decltype(&dwarf_tag) tag = nullptr;
  decltype(&dwarf_attr) attr = nullptr;
  decltype(&dwarf_formudata) formudata = nullptr;
  decltype(&dwarf_getsrcfiles) getsrcfiles = nullptr;
  decltype(&dwarf_filesrc) filesrc = nullptr;
  // The names of inlined functions (InlineFrames; optional).
  decltype(&dwarf_attr_integrate) attr_integrate = nullptr;
  decltype(&dwarf_formstring) formstring = nullptr;
  decltype(&dwarf_getscopes_die) getscopes_die = nullptr;
  bool HasInlineChains() const {
    return module_addrdie && getscopes && tag && attr && formudata &&
           getsrcfiles && filesrc;
  }
};

namespace {

std::string Demangle(const char* name) {
  if (name == nullptr) return "";
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && demangled != nullptr) {
    std::string out(demangled);
    std::free(demangled);
    return out;
  }
  return name;
}

std::string Basename(const char* path) {
  if (path == nullptr) return "";
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string MainProgramName() {
  char buffer[4096];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "";
  buffer[n] = '\0';
  return Basename(buffer);
}

}  // namespace

bool Symbolizer::EnsureDwfl() {
  if (dwfl_ != nullptr) return true;
  if (dwfl_tried_) return false;
  dwfl_tried_ = true;
  OpenOptionalLibrary("libelf.so.1");  // what libdw needs, beside the tool
  void* handle = OpenOptionalLibrary("libdw.so.1");
  if (handle == nullptr) return false;
  auto* api = new DwflApi();
  bool ok =
      LoadEntryPoint(handle, "dwfl_begin", &api->begin) &&
      LoadEntryPoint(handle, "dwfl_linux_proc_report",
                     &api->linux_proc_report) &&
      LoadEntryPoint(handle, "dwfl_report_begin", &api->report_begin) &&
      LoadEntryPoint(handle, "dwfl_report_end", &api->report_end) &&
      LoadEntryPoint(handle, "dwfl_addrmodule", &api->addrmodule) &&
      LoadEntryPoint(handle, "dwfl_module_getsrc", &api->module_getsrc) &&
      LoadEntryPoint(handle, "dwfl_lineinfo", &api->lineinfo) &&
      LoadEntryPoint(handle, "dwfl_module_addrname", &api->module_addrname) &&
      LoadEntryPoint(handle, "dwfl_linux_proc_find_elf",
                     &api->linux_proc_find_elf) &&
      LoadEntryPoint(handle, "dwfl_standard_find_debuginfo",
                     &api->standard_find_debuginfo) &&
      LoadEntryPoint(handle, "dwfl_offline_section_address",
                     &api->offline_section_address) &&
      LoadEntryPoint(handle, "dwfl_end", &api->end);
  if (ok) {
    LoadEntryPoint(handle, "dwfl_module_addrdie", &api->module_addrdie);
    LoadEntryPoint(handle, "dwarf_getscopes", &api->getscopes);
    LoadEntryPoint(handle, "dwarf_tag", &api->tag);
    LoadEntryPoint(handle, "dwarf_attr", &api->attr);
    LoadEntryPoint(handle, "dwarf_formudata", &api->formudata);
    LoadEntryPoint(handle, "dwarf_getsrcfiles", &api->getsrcfiles);
    LoadEntryPoint(handle, "dwarf_filesrc", &api->filesrc);
    LoadEntryPoint(handle, "dwarf_attr_integrate", &api->attr_integrate);
    LoadEntryPoint(handle, "dwarf_formstring", &api->formstring);
    LoadEntryPoint(handle, "dwarf_getscopes_die", &api->getscopes_die);
  }
  if (!ok) {
    delete api;
    return false;
  }
  api->callbacks = Dwfl_Callbacks{};
  api->callbacks.find_elf = api->linux_proc_find_elf;
  api->callbacks.find_debuginfo = api->standard_find_debuginfo;
  api->callbacks.section_address = api->offline_section_address;
  Dwfl* dwfl = api->begin(&api->callbacks);
  if (dwfl == nullptr) {
    delete api;
    return false;
  }
  api->report_begin(dwfl);
  if (api->linux_proc_report(dwfl, getpid()) != 0) {
    api->end(dwfl);
    delete api;
    return false;
  }
  api->report_end(dwfl, nullptr, nullptr);
  dwfl_api_ = api;
  dwfl_ = dwfl;
  dwfl_reports_ = 1;
  return true;
}

Symbolizer::~Symbolizer() {
  absl::MutexLock lock(&mu_);
  if (dwfl_ != nullptr) dwfl_api_->end(static_cast<Dwfl*>(dwfl_));
  delete dwfl_api_;
}

bool Symbolizer::HasLineInfo() {
  absl::MutexLock lock(&mu_);
  return EnsureDwfl();
}

SymbolizedFrame Symbolizer::Resolve(uintptr_t return_address) {
  SymbolizedFrame frame;
  frame.address = return_address;
  if (PythonFrameInfo py; LookUpPythonFrame(return_address, &py)) {
    frame.function = std::move(py.function);
    frame.file = std::move(py.file);
    frame.line = py.line;
    frame.module = "python";
    return frame;
  }
  // The return address points after the call; the call itself is one byte back.
  const uintptr_t pc = return_address > 0 ? return_address - 1 : 0;

  // Where the module's own table was read, its answer is final: an address
  // no function of it covers (code between functions) gets no name, and
  // libdw's and absl's lookups, which walk the whole table (tens of ms in a
  // framework's module), are not asked to find none either.
  const LoadedModule* loaded = modules_.At(pc);
  bool table_read = false;
  if (loaded != nullptr) {
    frame.module = loaded->name;
    if (const char* name = FunctionNameAt(*loaded, pc, &table_read)) {
      frame.function = Demangle(name);
    }
  }

  if (EnsureDwfl()) {
    auto* dwfl = static_cast<Dwfl*>(dwfl_);
    Dwfl_Module* module = dwfl_api_->addrmodule(dwfl, pc);
    if (module == nullptr && dwfl_reports_ < 8) {
      // A module loaded after the last report (dlopen): report the maps again.
      dwfl_api_->report_begin(dwfl);
      dwfl_api_->linux_proc_report(dwfl, getpid());
      dwfl_api_->report_end(dwfl, nullptr, nullptr);
      ++dwfl_reports_;
      module = dwfl_api_->addrmodule(dwfl, pc);
    }
    if (module != nullptr) {
      if (frame.function.empty() && !table_read) {
        if (const char* name = dwfl_api_->module_addrname(module, pc)) {
          frame.function = Demangle(name);
        }
      }
      if (Dwfl_Line* line = dwfl_api_->module_getsrc(module, pc)) {
        int lineno = 0;
        const char* file = dwfl_api_->lineinfo(line, nullptr, &lineno, nullptr,
                                               nullptr, nullptr);
        if (file != nullptr) {
          frame.file = file;
          frame.line = lineno;
          if (IsCudaRuntimeHeader(frame.file)) {
            LeaveRuntimeHeaders(module, pc, &frame);
          }
        }
      }
    }
  }
  if ((frame.function.empty() && !table_read) || frame.module.empty()) {
    char buffer[1024];
    Dl_info info{};
    const bool found = dladdr(reinterpret_cast<void*>(pc), &info) != 0;
    if (frame.module.empty() && found) {
      frame.module = Basename(info.dli_fname);
      if (frame.module.empty()) frame.module = MainProgramName();
    }
    if (frame.function.empty() && !table_read) {
      if (absl::Symbolize(reinterpret_cast<void*>(pc), buffer,
                          sizeof(buffer))) {
        frame.function = buffer;
      } else if (found && info.dli_sname != nullptr) {
        frame.function = Demangle(info.dli_sname);
      }
    }
  }
  return frame;
}

const char* Symbolizer::FunctionNameAt(const LoadedModule& module, uintptr_t pc,
                                       bool* table_read) {
  auto it = symbols_.find(module.path);
  if (it == symbols_.end()) {
    it =
        symbols_.emplace(module.path, FunctionSymbols::Read(module.path)).first;
  }
  *table_read = it->second != nullptr;
  return *table_read ? it->second->NameAt(pc - module.bias) : nullptr;
}

void Symbolizer::LeaveRuntimeHeaders(void* dwfl_module, uintptr_t pc,
                                     SymbolizedFrame* frame) {
  const DwflApi& api = *dwfl_api_;
  if (!api.HasInlineChains()) return;
  auto* module = static_cast<Dwfl_Module*>(dwfl_module);
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = api.module_addrdie(module, pc, &bias);
  if (cu == nullptr) return;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (api.getsrcfiles(cu, &files, &file_count) != 0) return;
  Dwarf_Die* scopes = nullptr;
  const int n = api.getscopes(cu, pc - bias, &scopes);
  // Innermost first: each inlined subroutine was called from the code of the
  // scope around it, at its DW_AT_call_file:DW_AT_call_line.
  for (int i = 0; i < n && IsCudaRuntimeHeader(frame->file); ++i) {
    if (api.tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    Dwarf_Attribute attribute;
    Dwarf_Word file_index = 0, line = 0;
    if (api.attr(&scopes[i], DW_AT_call_file, &attribute) == nullptr ||
        api.formudata(&attribute, &file_index) != 0 ||
        api.attr(&scopes[i], DW_AT_call_line, &attribute) == nullptr ||
        api.formudata(&attribute, &line) != 0) {
      break;
    }
    const char* file = api.filesrc(files, file_index, nullptr, nullptr);
    if (file == nullptr) break;
    frame->file = file;
    frame->line = static_cast<int>(line);
  }
  std::free(scopes);
}

std::vector<SymbolizedFrame> Symbolizer::InlineFrames(
    uintptr_t return_address) {
  const SymbolizedFrame outer = Symbolize(return_address);
  std::vector<SymbolizedFrame> frames;
  absl::MutexLock lock(&mu_);
  const uintptr_t pc = return_address > 0 ? return_address - 1 : 0;
  const DwflApi* api = EnsureDwfl() ? dwfl_api_ : nullptr;
  Dwfl_Module* module = api != nullptr && api->HasInlineChains() &&
                                api->attr_integrate && api->formstring
                            ? api->addrmodule(static_cast<Dwfl*>(dwfl_), pc)
                            : nullptr;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu =
      module != nullptr ? api->module_addrdie(module, pc, &bias) : nullptr;
  Dwfl_Line* line =
      module != nullptr ? api->module_getsrc(module, pc) : nullptr;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (cu == nullptr || line == nullptr ||
      api->getsrcfiles(cu, &files, &file_count) != 0) {
    return {outer};
  }
  int lineno = 0;
  const char* file =
      api->lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
  if (file == nullptr) return {outer};
  SymbolizedFrame at;  // where the innermost level stands
  at.address = return_address;
  at.module = outer.module;
  at.file = file;
  at.line = lineno;
  Dwarf_Die* scopes = nullptr;
  int n = api->getscopes(cu, pc - bias, &scopes);
  // dwarf_getscopes follows an inlined subroutine out to its abstract
  // definition; the concrete chain (who inlined it, and who inlined that)
  // is the innermost scope's own, as eu-addr2line -i reads it.
  if (n > 0 && api->getscopes_die != nullptr &&
      api->tag(&scopes[0]) == DW_TAG_inlined_subroutine) {
    Dwarf_Die innermost = scopes[0];
    std::free(scopes);
    scopes = nullptr;
    n = api->getscopes_die(&innermost, &scopes);
  }
  // Innermost first: each inlined subroutine stands at `at`, and was called
  // from the scope around it at its DW_AT_call_file:DW_AT_call_line.
  for (int i = 0; i < n; ++i) {
    if (api->tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    Dwarf_Attribute attribute;
    const char* name = api->formstring(
        api->attr_integrate(&scopes[i], DW_AT_name, &attribute));
    Dwarf_Word file_index = 0, call_line = 0;
    const char* call_file = nullptr;
    if (api->attr(&scopes[i], DW_AT_call_file, &attribute) != nullptr &&
        api->formudata(&attribute, &file_index) == 0 &&
        api->attr(&scopes[i], DW_AT_call_line, &attribute) != nullptr &&
        api->formudata(&attribute, &call_line) == 0) {
      call_file = api->filesrc(files, file_index, nullptr, nullptr);
    }
    if (call_file == nullptr) break;
    at.function = name != nullptr ? name : "";
    frames.push_back(at);
    at.file = call_file;
    at.line = static_cast<int>(call_line);
  }
  std::free(scopes);
  at.function = outer.function;  // the function the code was compiled into
  frames.push_back(at);
  return frames;
}

SymbolizedFrame Symbolizer::Symbolize(uintptr_t return_address) {
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(return_address);
  if (it != cache_.end()) return it->second;
  SymbolizedFrame frame = Resolve(return_address);
  cache_.emplace(return_address, frame);
  return frame;
}

std::vector<SymbolizedFrame> Symbolizer::SymbolizeStack(StackView stack) {
  std::vector<SymbolizedFrame> frames;
  frames.reserve(stack.size());
  for (uintptr_t pc : stack) frames.push_back(Symbolize(pc));
  size_t first = 0;
  while (first + 1 < frames.size() && IsCudaInternalFrame(frames[first])) {
    ++first;
  }
  frames.erase(frames.begin(), frames.begin() + static_cast<long>(first));
  // Below main there is only the C library's start-up code: noise. (A
  // Python function named main is a script's.)
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].function == "main" && !IsPythonFrame(frames[i].address)) {
      frames.resize(i + 1);
      break;
    }
  }
  return frames;
}

bool IsCudaRuntimeHeader(absl::string_view file) {
  const size_t slash = file.rfind('/');
  const absl::string_view base =
      slash == absl::string_view::npos ? file : file.substr(slash + 1);
  if (base == "cuda_runtime.h" || base == "cuda_runtime_api.h") return true;
  // The toolkit's internal headers (include/crt/): nvcc's launch helper
  // __cudaLaunchKernel_helper in crt/device_functions.h, among others.
  return absl::StrContains(file, "/include/crt/");
}

bool IsCudaInternalFrame(const SymbolizedFrame& frame) {
  // A runtime header's wrapper (cudaMalloc<T> not inlined, at -O0).
  if (IsCudaRuntimeHeader(frame.file)) return true;
  const std::string& m = frame.module;
  if (absl::StartsWith(m, "libcudart.so") ||
      absl::StartsWith(m, "libcuda.so")) {
    return true;
  }
  // Statically linked cudart lives in the program's own module; its symbols say
  // who they are.
  const std::string& f = frame.function;
  if (absl::StartsWith(f, "cudart::") || absl::StartsWith(f, "__cudart") ||
      absl::StartsWith(f, "libcudart_static_")) {
    return true;
  }
  // cudaMalloc & co themselves when cudart is linked in: plain C names (no
  // parameter list, unlike the program's own C++ helpers such as
  // cudaMalloc<float>(float**, unsigned long)).
  return f.size() > 4 && absl::StartsWith(f, "cuda") && f[4] >= 'A' &&
         f[4] <= 'Z' && f.find('(') == std::string::npos;
}

}  // namespace gmt
