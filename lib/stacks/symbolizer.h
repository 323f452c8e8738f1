// Symbolizer: return addresses -> function, file:line, module. Late and cached.
//
// Runs only when a report or snapshot needs names, never inside a wrapper.
// Function names come from each module's symbol table, sorted once
// (lib/stacks/elf_symbols.h; libdw's own lookup walks the whole table per
// address); file:line from elfutils' libdwfl when libdw.so.1 can be loaded
// (dlopen: the library does not depend on it). Without libelf/libdw it falls
// back to absl::Symbolize and dladdr, so a machine without them still gets
// function and module names.
#ifndef GMT_LIB_STACKS_SYMBOLIZER_H_
#define GMT_LIB_STACKS_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "lib/stacks/elf_symbols.h"
#include "lib/stacks/stack_depot.h"

namespace gmt {

struct SymbolizedFrame {
  uintptr_t address = 0;
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file; empty without debug info
  int line = 0;          // 0 without debug info
  std::string module;    // basename of the object, e.g. "libtorch_cuda.so"
};

// "main (app.cu:10)", or "main" without a line: how one-line messages name
// where something happened.
std::string FrameSiteText(const SymbolizedFrame& frame);

class Symbolizer {
 public:
  Symbolizer() = default;
  // Closes the libdw session (and the ELF files it holds open).
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Resolves one return address (looked up at address - 1, the call). Cached
  // per address. Thread-safe.
  SymbolizedFrame Symbolize(uintptr_t return_address);

  // Resolves a whole stack, then drops leading frames that belong to the CUDA
  // runtime or driver themselves (statically linked cudart's internals), so the
  // first frame is the program's own call, and frames below main (libc's
  // start-up code).
  std::vector<SymbolizedFrame> SymbolizeStack(StackView stack);

  // The functions inlined at one return address, innermost first, each with
  // the file:line it stands at (addr2line -i); the last is the function the
  // code was compiled into, at the line where the next one out was called.
  // One frame (Symbolize's) without inline information. Not cached.
  std::vector<SymbolizedFrame> InlineFrames(uintptr_t return_address);

  // Whether file:line information is available (libdw loaded).
  bool HasLineInfo();

 private:
  struct DwflApi;
  SymbolizedFrame Resolve(uintptr_t pc) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `frame`'s file:line lies in a CUDA runtime header (an inlined wrapper
  // such as cudaMalloc<T>): moves it out along the inline chain at `pc` to
  // the first call site outside those headers, the program's line.
  void LeaveRuntimeHeaders(void* dwfl_module, uintptr_t pc,
                           SymbolizedFrame* frame)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool EnsureDwfl() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The module's function name at `pc`, from its own sorted table (read
  // once per module); nullptr when it has none there. `table_read`: whether
  // the module has a table the tool could read.
  const char* FunctionNameAt(const LoadedModule& module, uintptr_t pc,
                             bool* table_read)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  absl::flat_hash_map<uintptr_t, SymbolizedFrame> cache_ ABSL_GUARDED_BY(mu_);
  LoadedModules modules_ ABSL_GUARDED_BY(mu_);
  // By file path; nullptr where the file has no table the tool can read.
  absl::flat_hash_map<std::string, std::unique_ptr<FunctionSymbols>> symbols_
      ABSL_GUARDED_BY(mu_);
  DwflApi* dwfl_api_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool dwfl_tried_ ABSL_GUARDED_BY(mu_) = false;
  void* dwfl_ ABSL_GUARDED_BY(mu_) = nullptr;
  int dwfl_reports_ ABSL_GUARDED_BY(mu_) = 0;
};

// Whether `file` is one of the CUDA runtime's headers (cuda_runtime.h,
// cuda_runtime_api.h, and the toolkit's include/crt/ headers), whose inline
// C++ wrappers call the API for the program: a line there is never the
// program's own.
bool IsCudaRuntimeHeader(absl::string_view file);

// Whether a frame is the CUDA runtime's or driver's own code (skipped at the
// innermost end of reported stacks), a runtime header's wrapper included.
bool IsCudaInternalFrame(const SymbolizedFrame& frame);

}  // namespace gmt

#endif  // GMT_LIB_STACKS_SYMBOLIZER_H_
