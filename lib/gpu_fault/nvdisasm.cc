#include "lib/gpu_fault/nvdisasm.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gmt::gpu_fault {
namespace {

bool IsExecutable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

// Writes all of `bytes` to `fd`.
bool WriteAll(int fd, absl::Span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Runs `argv` with its stdout and stderr both into `out` (one pipe, so a
// child that fills one stream cannot block on it while we read the other).
// Returns the wait status.
//
// posix_spawn, not fork: this runs in the crash report's writer, a copy of
// the crashed process with one thread, where fork() would run the program's
// pthread_atfork handlers. Those assume their library's threads exist: on the
// H200, numpy's OpenBLAS handler waited for its thread pool there forever.
absl::StatusOr<int> RunCapturing(const std::vector<std::string>& argv,
                                 std::string* out) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the copies; the originals close at exec.
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDERR_FILENO);
  pid_t child = -1;
  const int spawned =
      posix_spawn(&child, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    return absl::InternalError(
        absl::StrCat("cannot run ", argv[0], ": ", std::strerror(spawned)));
  }
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buffer, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// nvdisasm's first line that reports an error ("nvdisasm fatal : ...").
std::string FirstErrorLine(absl::string_view output) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StartsWith(line, "nvdisasm")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "";
}

}  // namespace

std::optional<std::string> FindNvdisasm(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (IsExecutable(explicit_path)) return explicit_path;
    return std::nullopt;
  }
  std::vector<std::string> folders;
  if (const char* path = getenv("PATH")) {
    for (absl::string_view dir : absl::StrSplit(path, ':')) {
      if (!dir.empty()) folders.emplace_back(dir);
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* home = getenv(var); home != nullptr && *home != '\0') {
      folders.push_back(absl::StrCat(home, "/bin"));
    }
  }
  folders.push_back("/usr/local/cuda/bin");
  for (const std::string& dir : folders) {
    std::string candidate = absl::StrCat(dir, "/nvdisasm");
    if (IsExecutable(candidate)) return candidate;
  }
  return std::nullopt;
}

absl::flat_hash_map<uint64_t, std::string> ParseDisassembly(
    absl::string_view text) {
  absl::flat_hash_map<uint64_t, std::string> by_address;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "/*")) continue;
    const size_t end = line.find("*/");
    if (end == absl::string_view::npos) continue;
    uint64_t address = 0;
    if (!absl::SimpleHexAtoi(line.substr(0, end), &address)) continue;
    absl::string_view instruction = line.substr(end + 2);
    // A trailing encoding comment (with -hex) and the ';'.
    if (size_t comment = instruction.find("/*");
        comment != absl::string_view::npos) {
      instruction = instruction.substr(0, comment);
    }
    instruction = absl::StripAsciiWhitespace(instruction);
    absl::ConsumeSuffix(&instruction, ";");
    instruction = absl::StripAsciiWhitespace(instruction);
    if (instruction.empty()) continue;
    by_address.emplace(address, std::string(instruction));
  }
  return by_address;
}

absl::StatusOr<absl::flat_hash_map<uint64_t, std::string>> DisassembleFunction(
    const std::string& nvdisasm, absl::Span<const uint8_t> image,
    uint32_t symbol_index) {
  const char* tmpdir = getenv("TMPDIR");
  std::string path =
      absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp",
                   "/gpumemtrace-module-XXXXXX");
  const int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat(
        "cannot make a temporary file for the module: ", std::strerror(errno)));
  }
  const bool written = WriteAll(fd, image);
  close(fd);
  if (!written) {
    unlink(path.c_str());
    return absl::InternalError("cannot write the module to a temporary file");
  }
  std::string out;
  absl::StatusOr<int> status = RunCapturing(
      {nvdisasm, "-c", "-fun", absl::StrCat(symbol_index), path}, &out);
  unlink(path.c_str());
  if (!status.ok()) return status.status();
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    const std::string first_error = FirstErrorLine(out);
    return absl::InternalError(absl::StrCat(
        "nvdisasm failed (",
        WIFEXITED(*status) ? absl::StrCat("exit ", WEXITSTATUS(*status))
                           : absl::StrCat("signal ", WTERMSIG(*status)),
        first_error.empty() ? "" : ": ", first_error, ")"));
  }
  return ParseDisassembly(out);
}

}  // namespace gmt::gpu_fault
