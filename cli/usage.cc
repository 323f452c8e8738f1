#include "cli/usage.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"

namespace gmt::cli {

std::string MainUsage() {
  return R"(NAME
    gpumemtrace - find and explain GPU memory errors and leaks in CUDA programs

SYNOPSIS
    gpumemtrace run [FLAGS] -- PROGRAM [ARGS...]
    gpumemtrace report FILE.json [--format FORMAT] [-o OUT]
    gpumemtrace report --diff BEFORE.json AFTER.json [--format text|json] [-o OUT]
    gpumemtrace health [ARGS...]
    gpumemtrace memtest [ARGS...]
    gpumemtrace explain-dump [FLAGS] DUMP
    gpumemtrace help [COMMAND]
    gpumemtrace --help | --help-options | --version

COMMANDS
    run       Run PROGRAM with libgpumemtrace.so preloaded (and as the CUDA
              injection library); FLAGS become GMT_OPTIONS settings.
    report    Render a saved JSON report again (text, json, html, trace,
              torch), or diff two gmt_snapshot_json() snapshots.
    health    GPU health figures (NVML), when built in.
    memtest   GPU memory test, when built in.
    explain-dump
              Explain a GPU fault from a CUDA GPU core dump: exception,
              kernel, line, faulting threads and address.
    help      This page, or the page of COMMAND.

OPTIONS
    -h, --help        This page.
    --help-options    Every GMT_OPTIONS key with its default and meaning.
    --version         The version.

EXIT STATUS
    run: the program's own (the launcher becomes the program), 126/127 when
    it cannot be executed; 2 for bad usage everywhere; 1 for other failures.

See `gpumemtrace help run` and `gpumemtrace help report` for the flags.
)";
}

std::string RunUsage() {
  return R"(NAME
    gpumemtrace run - trace a CUDA program's GPU memory

SYNOPSIS
    gpumemtrace run [FLAGS] -- PROGRAM [ARGS...]

DESCRIPTION
    Starts PROGRAM with libgpumemtrace.so first in LD_PRELOAD (the user's
    LD_PRELOAD is kept after it) and, when the library exports
    InitializeInjection and CUDA_INJECTION64_PATH is not already set, as
    CUDA_INJECTION64_PATH (statically linked cudart). Each flag becomes one
    GMT_OPTIONS setting, appended to a GMT_OPTIONS already in the
    environment (later settings win). Values are checked before PROGRAM
    starts; a bad one is an error naming the flag. The launcher then becomes
    PROGRAM (exec): the exit status is PROGRAM's. With --explain-faults the
    library arms the driver's GPU core dump (no CUDA_INJECTION64_PATH then)
    and its crash report explains a GPU fault.

    The library is GMT_LIBRARY when set, else found next to the launcher:
    ../lib/, the install libdir, ../interpose/ (build tree), or the
    launcher's own folder.

FLAGS
    --leak-check[=yes|no], --no-leak-check
                         leak_check: list memory still allocated at exit.
    --guard[=yes|no], --no-guard
                         guard: redzones with canaries around allocations.
    --torch[=yes|no]     torch: PyTorch tensor mode. Every tensor becomes its
                         own guarded block (PyTorch's cudaMallocAsync
                         backend, set in PYTORCH_CUDA_ALLOC_CONF), so a
                         kernel writing past one tensor, or into a freed one,
                         is reported; with PyTorch's default allocator such
                         writes land inside a shared segment, unseen. No
                         change to the script.
    --check LEVEL        check: when zones are checked: none, exit, sync,
                         kernel.
    --report FORMAT      report: text, json, html, trace, torch, a
                         comma-separated list, or none.
    -o FILE, --output FILE
                         report_path: where the report goes (%p: pid).
    --error-exitcode N   exitcode: exit with N (1 to 255) when errors or leaks
                         were reported; 0 keeps the program's status.
    --suppressions FILE  suppressions: rules for errors and leaks to leave out.
    -O KEY=VALUE, --option KEY=VALUE
                         any other GMT_OPTIONS key (gpumemtrace --help-options).
    --explain-faults     at a GPU exception (an illegal address, a misaligned
                         access, ...) the driver writes a lightweight GPU core
                         dump and aborts PROGRAM (SIGABRT), as the driver does
                         with its dump on; the crash report then says what
                         the dump says: the exception, kernel and offset,
                         source line (-lineinfo), faulting block and threads,
                         and the faulting address, placed among the blocks,
                         where nvdisasm can derive it (explain_faults=1).
                         Not with CUDA_COREDUMP_* already set.
    --keep-gpu-dump      with --explain-faults: keep the dump and print the
                         cuda-gdb command that opens it.
    -h, --help           This page.
    --                   Ends the flags; PROGRAM and its arguments follow.

    Every flag also takes --flag=VALUE. Values cannot contain ':' (the
    GMT_OPTIONS separator).

EXAMPLES
    gpumemtrace run -- ./train --epochs 1
    gpumemtrace run --report json -o gmt.%p.json --error-exitcode 3 -- ./app
    gpumemtrace run --torch -- python3 train.py
    gpumemtrace run --check kernel -O stack_depth=32 -- python3 train.py
    gpumemtrace run --explain-faults -- ./app
)";
}

std::string ReportUsage() {
  return R"(NAME
    gpumemtrace report - render a saved report again, or diff two snapshots

SYNOPSIS
    gpumemtrace report FILE.json [--format FORMAT] [-o OUT] [--max-leaks N]
    gpumemtrace report --diff BEFORE.json AFTER.json [--format text|json]
                       [-o OUT]

DESCRIPTION
    The first form reads a JSON report written with report=json (FILE "-"
    reads standard input) and writes it as FORMAT: text (default; the exit
    report as the run printed it, every section included), json (the same
    bytes again), html, trace (Chrome/Perfetto trace events) or torch
    (PyTorch memory snapshot pickle; binary, so give -o). A report from a
    newer version is read too: unknown fields are ignored.

    The second form compares two snapshots saved from gmt_snapshot_json()
    (include/gmt/gmt.h) and prints what was allocated and freed in between,
    grouped by call site (text, as gmt::diff_text()), or the document of
    gmt_diff_json() with --format json.

FLAGS
    --format FORMAT      Output format (see above).
    -o OUT, --output OUT Write to OUT instead of standard output.
    --max-leaks N        Text: leak call sites listed (0 for all; default 50).
    --diff               Compare two snapshots (the second form).
    -h, --help           This page.

EXIT STATUS
    0 written; 1 an input is unreadable, not JSON or not a report/snapshot
    (the message says which and where); 2 bad usage.
)";
}

std::string ExplainDumpUsage() {
  return R"(NAME
    gpumemtrace explain-dump - what a CUDA GPU core dump says about a fault

SYNOPSIS
    gpumemtrace explain-dump [--nvdisasm PATH] [--no-disassemble]
                             [--max-warps N] DUMP

DESCRIPTION
    Reads DUMP, a GPU core dump the CUDA driver wrote at a GPU exception
    (CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1; a lightweight one is enough:
    CUDA_COREDUMP_GENERATION_FLAGS='skip_nonrelocated_elf_images,
    skip_global_memory,skip_shared_memory,skip_local_memory,
    skip_constbank_memory'), and prints per faulting warp: the exception,
    the kernel and the PC as kernel+offset, the source file:line when the
    module was built with line info (nvcc -lineinfo; Triton has it), the
    block and threads that faulted, and, when nvdisasm (CUDA toolkit) can
    decode the faulting instruction, the address it used, read from the
    dumped registers. What cannot be derived is said, with the reason.
    A truncated or damaged dump is an error that says what is wrong.

FLAGS
    --nvdisasm PATH      The disassembler to use (default: found in PATH,
                         $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin).
    --no-disassemble     Do not run nvdisasm (no faulting address).
    --max-warps N        Faulting warps shown in full (default 3; 0: all).
    -h, --help           This page.

EXIT STATUS
    0 explained; 1 the dump is unreadable or damaged; 2 bad usage.
)";
}

std::string UsageLine(absl::string_view command) {
  if (command == "run") {
    return "usage: gpumemtrace run [FLAGS] -- PROGRAM [ARGS...]  "
           "(gpumemtrace run --help)";
  }
  if (command == "report") {
    return "usage: gpumemtrace report FILE.json [--format FORMAT] [-o OUT] | "
           "report --diff A.json B.json  (gpumemtrace report --help)";
  }
  if (command == "explain-dump") {
    return "usage: gpumemtrace explain-dump [FLAGS] DUMP  "
           "(gpumemtrace explain-dump --help)";
  }
  return "usage: gpumemtrace {run,report,health,memtest,explain-dump,help} ... "
         " "
         "(gpumemtrace --help)";
}

int UsageError(absl::string_view command, absl::string_view message) {
  const std::string who =
      command.empty() ? "gpumemtrace" : absl::StrCat("gpumemtrace ", command);
  std::fprintf(stderr, "%s\n%s: error: %.*s\n", UsageLine(command).c_str(),
               who.c_str(), static_cast<int>(message.size()), message.data());
  return 2;
}

}  // namespace gmt::cli
