#include "lib/report/report_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "lib/core/log.h"

namespace gmt {
namespace {

bool WriteAll(int fd, absl::string_view contents) {
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// The process's umask, read without changing it (umask(2) would, for every
// thread, for a moment): Linux shows it in /proc/self/status. 022 when that
// cannot be read.
mode_t CurrentUmask() {
  mode_t mask = 022;
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      unsigned value = 0;
      if (std::sscanf(line, "Umask: %o", &value) == 1) {
        mask = static_cast<mode_t>(value);
        break;
      }
    }
    std::fclose(f);
  }
  return mask;
}

}  // namespace

// ---- Reports to look at (viz): html, trace, torch. Each has its own path
// option; report_path is the text/JSON one only. A file that cannot be
// written goes to $TMPDIR (or /tmp) under the same name, with a warning:
// these are too big (or binary) for stderr.
void WriteVizOutputs(const ReportData& data, const Options& options) {
  struct Format {
    ReportFormat format;
    const std::string& pattern;
    std::string (*render)(const ReportData&);
  };
  const Format formats[] = {
      {ReportFormat::kHtml, options.html_path, &RenderHtml},
      {ReportFormat::kTrace, options.trace_path, &RenderChromeTrace},
      {ReportFormat::kTorch, options.torch_path, &RenderTorchSnapshot},
  };
  for (const Format& f : formats) {
    if (!options.report.Has(f.format)) continue;
    const std::string name(OptionValueText(f.format));
    const std::string rendered = f.render(data);
    std::string path = ExpandPath(f.pattern, data.pid);
    std::string error;
    if (WriteFileAtomically(path, rendered, &error)) {
      LogNote(0, "%s report written to %s", name.c_str(), path.c_str());
      continue;
    }
    const char* tmp = std::getenv("TMPDIR");
    const size_t slash = path.rfind('/');
    std::string fallback = absl::StrCat(
        tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/",
        slash == std::string::npos ? path : path.substr(slash + 1));
    std::string fallback_error;
    if (fallback != path &&
        WriteFileAtomically(fallback, rendered, &fallback_error)) {
      LogError("%s; %s report written to %s instead", error.c_str(),
               name.c_str(), fallback.c_str());
    } else {
      LogError("%s; the %s report is lost (the other formats are not)",
               error.c_str(), name.c_str());
    }
  }
}

bool WriteFileAtomically(const std::string& path, absl::string_view contents,
                         std::string* error) {
  // A link at the report's own path is someone else's doing (a report path in
  // a shared folder such as /tmp): never write through it, nor replace it.
  struct stat existing;
  if (lstat(path.c_str(), &existing) == 0 && S_ISLNK(existing.st_mode)) {
    *error =
        absl::StrCat("refusing to write ", path, ": it is a symbolic link");
    return false;
  }
  // A fresh file of a name nobody can guess, made by us (O_EXCL: mkstemp),
  // in the same folder so that rename() is atomic. A predictable ".tmp" name
  // let another user plant a link there and have the traced program
  // truncate any file it could write.
  const size_t slash = path.rfind('/');
  const std::string folder =
      slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base =
      slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp =
      absl::StrCat(folder.empty() ? "/" : folder, "/.", base, ".XXXXXX");
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    *error = absl::StrCat("cannot create a file next to ", path, ": ",
                          std::strerror(errno));
    return false;
  }
  // mkstemp makes 0600; a report is as readable as any file the program
  // creates (0666 less its umask).
  fchmod(fd, 0666 & ~CurrentUmask());
  bool ok = WriteAll(fd, contents);
  int saved = errno;
  if (ok && fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    ok = false;
    saved = errno;
  }
  if (close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    unlink(tmp.c_str());
    *error = absl::StrCat("cannot write ", path, ": ", std::strerror(saved));
    return false;
  }
  // rename() replaces the name itself, never what a link there points to.
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    saved = errno;
    unlink(tmp.c_str());
    *error = absl::StrCat("cannot write ", path, ": ", std::strerror(saved));
    return false;
  }
  return true;
}

bool TextReportToStderr(const Options& options) {
  // The text report goes to the path only when it is the only format.
  return options.report.Has(ReportFormat::kText) &&
         (options.report.Has(ReportFormat::kJson) ||
          options.report_path.empty());
}

void WriteReportOutputs(const ReportData& data, const Options& options) {
  const bool text = options.report.Has(ReportFormat::kText);
  const bool json = options.report.Has(ReportFormat::kJson);
  if (text) {
    const bool to_file = !TextReportToStderr(options);
    // On stderr, a report already printed there in full is not repeated.
    std::string rendered =
        !to_file && !data.earlier_printed.reason.empty()
            ? RenderTextAfterEarlier(data)
            : RenderText(data, options.max_leaks,
                         /*errors_printed=*/!to_file && options.print_errors);
    if (to_file) {
      std::string path = ExpandPath(options.report_path, data.pid);
      std::string error;
      if (!WriteFileAtomically(path, rendered, &error)) {
        LogError("%s; writing the report to stderr instead", error.c_str());
        WriteStderr(rendered.data(), rendered.size());
      }
    } else {
      WriteStderr(rendered.data(), rendered.size());
    }
  }
  if (json) {
    std::string rendered = RenderJson(data);
    rendered.push_back('\n');
    std::string pattern = options.report_path.empty() ? "gpumemtrace.%p.json"
                                                      : options.report_path;
    std::string path = ExpandPath(pattern, data.pid);
    std::string error;
    if (WriteFileAtomically(path, rendered, &error)) {
      if (!text) {
        LogNote(0, "JSON report written to %s", path.c_str());
      }
    } else {
      LogError("%s; writing the JSON report to stderr instead", error.c_str());
      WriteStderr(rendered.data(), rendered.size());
    }
  }
  WriteVizOutputs(data, options);  // html, trace, torch (viz)
}

}  // namespace gmt
