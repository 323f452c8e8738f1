#include "lib/report/report_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
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
  const std::string tmp = absl::StrCat(path, ".tmp");
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno));
    return false;
  }
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
    *error = absl::StrCat("cannot write ", tmp, ": ", std::strerror(saved));
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    saved = errno;
    unlink(tmp.c_str());
    *error = absl::StrCat("cannot rename ", tmp, " to ", path, ": ",
                          std::strerror(saved));
    return false;
  }
  return true;
}

void WriteReportOutputs(const ReportData& data, const Options& options) {
  const bool text = options.report.Has(ReportFormat::kText);
  const bool json = options.report.Has(ReportFormat::kJson);
  if (text) {
    // The text report goes to the path only when it is the only format.
    const bool to_file = !json && !options.report_path.empty();
    std::string rendered =
        RenderText(data, options.max_leaks,
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
