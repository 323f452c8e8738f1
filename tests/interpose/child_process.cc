#include "tests/interpose/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"

extern char** environ;

namespace gmt_test {
namespace {

// Variables a test run must not inherit from the environment ctest runs in.
bool Inherited(const char* entry) {
  static const char* const kDropped[] = {
      "LD_PRELOAD=", "LD_LIBRARY_PATH=", "GMT_OPTIONS=", "FAKE_CUDA_",
      "CUDA_INJECTION64_PATH="};
  for (const char* prefix : kDropped) {
    if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0) return false;
  }
  return true;
}

std::string Replace(std::string text, const std::string& from,
                    const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

ScopedTempDir::ScopedTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/gmt_test_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp(" << pattern << "): " << std::strerror(errno);
    return;
  }
  path_ = buffer.data();
}

ScopedTempDir::~ScopedTempDir() {
  if (path_.empty()) return;
  if (testing::Test::HasFailure()) {
    std::fprintf(stderr, "[ kept ] %s\n", path_.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string RunResult::Describe() const {
  std::ostringstream os;
  os << "exit code " << exit_code << (timed_out ? " (timed out)" : "")
     << ", pid " << pid << "\n--- stdout ---\n"
     << out << "--- stderr ---\n"
     << err << "--- report " << report_path << " ---\n"
     << (has_report ? report.dump(1).substr(0, 6000) : report_error) << "\n";
  return os.str();
}

std::vector<std::string> ChildEnvironment(const std::string& dir,
                                          const RunOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (Inherited(*e)) env.emplace_back(*e);
  }
  env.push_back(std::string("LD_LIBRARY_PATH=") + GMT_FAKE_CUDA_DIR);
  if (options.preload)
    env.push_back(std::string("LD_PRELOAD=") + GMT_TOOL_PATH);
  if (options.set_gmt_options) {
    std::string value = options.gmt_options.empty()
                            ? "report=json:report_path=" + dir + "/r.%p.json"
                            : Replace(options.gmt_options, "<dir>", dir);
    env.push_back("GMT_OPTIONS=" + value);
  }
  for (const auto& [key, value] : options.env) env.push_back(key + "=" + value);
  return env;
}

RunResult RunProgram(const std::string& program,
                     const std::vector<std::string>& args,
                     const std::string& dir, const RunOptions& options) {
  RunResult result;
  std::string out_path = dir + "/stdout.txt";
  std::string err_path = dir + "/stderr.txt";

  std::vector<std::string> env = ChildEnvironment(dir, options);

  std::vector<std::string> argv_storage = {program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(),
                       envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    result.report_error = "posix_spawn(" + program + "): " + std::strerror(rc);
    return result;
  }
  result.pid = pid;

  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(options.timeout_s);
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);

  result.report_path = dir + "/r." + std::to_string(pid) + ".json";
  std::string text = ReadFile(result.report_path);
  if (text.empty()) {
    result.report_error = "no report at " + result.report_path;
  } else {
    try {
      result.report = nlohmann::json::parse(text);
      result.has_report = true;
    } catch (const std::exception& e) {
      result.report_error = std::string("report does not parse: ") + e.what();
    }
  }
  return result;
}

}  // namespace gmt_test
