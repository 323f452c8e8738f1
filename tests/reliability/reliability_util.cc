#include "tests/reliability/reliability_util.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace gmt_test {
std::map<std::string, long> LineFigures(const std::string& out,
                                        const std::string& tag) {
  std::map<std::string, long> figures;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(tag + " ", 0) != 0) continue;
    std::istringstream words(line.substr(tag.size() + 1));
    std::string name;
    long value = 0;
    while (words >> name >> value) figures[name] = value;
    break;
  }
  return figures;
}

std::vector<std::string> FileNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

RunResult RunWithFileSizeLimit(const std::string& program,
                               const std::vector<std::string>& args,
                               const std::string& dir,
                               const std::string& gmt_options,
                               long file_size_limit, int timeout_s) {
  RunResult result;
  // Everything the child needs is built before fork(): it only calls
  // async-signal-safe functions before execve.
  RunOptions options;
  options.gmt_options = gmt_options;
  std::vector<std::string> env = ChildEnvironment(dir, options);
  std::vector<std::string> argv_storage = {program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    result.report_error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  pid_t pid = fork();
  if (pid < 0) {
    result.report_error = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(file_size_limit);
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(125);
    signal(SIGXFSZ, SIG_IGN);  // kept across execve: writes fail with EFBIG
    execve(program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  result.pid = pid;

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    if (poll(fds, 2, 100) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[65536];
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
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
