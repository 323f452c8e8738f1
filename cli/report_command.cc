// `gpumemtrace report`: re-render a saved JSON report, or diff two snapshots
// saved from gmt_snapshot_json(). Reading is lib/report/report_json_parse.h and
// lib/report/snapshot_diff.h; rendering is the library's own writers, so a
// saved report prints exactly as it would have at exit.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "gmt/gmt.h"
#include "lib/report/report.h"
#include "lib/report/report_json_parse.h"
#include "lib/report/snapshot_diff.h"

namespace gmt::cli {
namespace {

// Inputs larger than this are refused rather than read into memory.
constexpr std::streamoff kMaxInputBytes = std::streamoff{1} << 30;

int Fail(const std::string& message) {
  std::fprintf(stderr, "gpumemtrace report: error: %s\n", message.c_str());
  return 1;
}

// The whole file ("-": standard input) into `out`.
bool ReadInput(const std::string& path, std::string* out, std::string* error) {
  if (path == "-") {
    std::ostringstream buf;
    buf << std::cin.rdbuf();
    *out = buf.str();
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = absl::StrCat("cannot read '", path, "'");
    return false;
  }
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) {
    *error = absl::StrCat("cannot read '", path, "' (not a regular file?)");
    return false;
  }
  if (size > kMaxInputBytes) {
    *error = absl::StrCat("'", path, "' is larger than 1 GiB");
    return false;
  }
  in.seekg(0);
  out->assign(static_cast<size_t>(size), '\0');
  if (!in.read(out->data(), size)) {
    *error = absl::StrCat("cannot read '", path, "'");
    return false;
  }
  return true;
}

bool WriteOutput(const std::string& path, const std::string& text,
                 std::string* error) {
  if (path.empty() || path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
        std::fflush(stdout) != 0) {
      *error = "cannot write to standard output";
      return false;
    }
    return true;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out ||
      !out.write(text.data(), static_cast<std::streamsize>(text.size())) ||
      !out.flush()) {
    *error = absl::StrCat("cannot write '", path, "'");
    return false;
  }
  return true;
}

// The one place that maps a --format name onto a writer of lib/report/report.h.
struct Writer {
  absl::string_view name;
  std::string (*render)(const ReportData& data, int64_t max_leaks);
};
constexpr Writer kWriters[] = {
    {"text", [](const ReportData& d,
                int64_t max_leaks) { return RenderText(d, max_leaks); }},
    {"json", [](const ReportData& d, int64_t) { return RenderJson(d) + "\n"; }},
    {"html", [](const ReportData& d, int64_t) { return RenderHtml(d); }},
    {"trace",
     [](const ReportData& d, int64_t) { return RenderChromeTrace(d); }},
    {"torch",
     [](const ReportData& d, int64_t) { return RenderTorchSnapshot(d); }},
};

const Writer* FindWriter(absl::string_view format) {
  for (const Writer& w : kWriters) {
    if (w.name == format) return &w;
  }
  return nullptr;
}

std::string WriterNames() {
  std::string out;
  for (const Writer& w : kWriters) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", w.name);
  }
  return out;
}

struct ReportArgs {
  bool diff = false;
  std::vector<std::string> inputs;
  std::string format;
  std::string output;
  int64_t max_leaks = 50;
};

// Returns "" or the usage error.
std::string ParseReportArgs(int argc, char** argv, ReportArgs* args,
                            bool* help) {
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (flags_done || arg == "-" || arg.empty() || arg[0] != '-') {
      args->inputs.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return "";
    }
    if (arg == "--diff") {
      args->diff = true;
      continue;
    }
    std::string name = arg;
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg[1] == '-') {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name != "--format" && name != "-o" && name != "--output" &&
        name != "--max-leaks") {
      return absl::StrCat("unknown flag '", name, "'");
    }
    if (!has_value) {
      if (i + 1 >= argc) return absl::StrCat(name, " needs a value");
      value = argv[++i];
    }
    if (name == "--format") {
      args->format = value;
    } else if (name == "--max-leaks") {
      if (!absl::SimpleAtoi(value, &args->max_leaks) || args->max_leaks < 0) {
        return absl::StrCat("--max-leaks: '", value,
                            "' is not a count (0 for all)");
      }
    } else {
      args->output = value;
    }
  }
  if (args->diff) {
    if (args->inputs.size() != 2) {
      return absl::StrCat(
          "--diff needs two snapshot files (BEFORE AFTER), got ",
          args->inputs.size());
    }
    if (args->format.empty()) args->format = "text";
    if (args->format != "text" && args->format != "json") {
      return absl::StrCat("--format '", args->format,
                          "' with --diff (expected text or json)");
    }
    return "";
  }
  if (args->inputs.size() != 1) {
    return args->inputs.empty()
               ? "no report file given"
               : absl::StrCat("one report file expected, got ",
                              args->inputs.size(),
                              " (to compare snapshots use --diff)");
  }
  if (args->format.empty()) args->format = "text";
  if (FindWriter(args->format) == nullptr) {
    return absl::StrCat("unknown --format '", args->format, "' (expected ",
                        WriterNames(), ")");
  }
  return "";
}

bool ReadSnapshot(const std::string& path, Snapshot* out, std::string* error) {
  std::string text;
  if (!ReadInput(path, &text, error)) return false;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    *error = absl::StrCat(path, ": not JSON");
    return false;
  }
  if (doc.is_object() && doc.contains("tool") && !doc.contains("allocations")) {
    *error = absl::StrCat(path,
                          ": this is an exit report, not a snapshot "
                          "(gmt_snapshot_json); render it with "
                          "`gpumemtrace report ",
                          path, "`");
    return false;
  }
  std::string why;
  if (!SnapshotFromJson(doc, out, &why)) {
    *error = absl::StrCat(path, ": not a snapshot: ", why);
    return false;
  }
  return true;
}

int DiffMain(const ReportArgs& args) {
  Snapshot before, after;
  std::string error;
  if (!ReadSnapshot(args.inputs[0], &before, &error) ||
      !ReadSnapshot(args.inputs[1], &after, &error)) {
    return Fail(error);
  }
  const SnapshotDiff diff = DiffSnapshots(before, after);
  std::string out =
      args.format == "json"
          ? DiffToJson(diff).dump(2, ' ', false,
                                  nlohmann::json::error_handler_t::replace) +
                "\n"
          : RenderDiffText(diff, static_cast<int>(getpid()));
  if (!WriteOutput(args.output, out, &error)) return Fail(error);
  return 0;
}

}  // namespace

int ReportMain(int argc, char** argv) {
  ReportArgs args;
  bool help = false;
  if (std::string why = ParseReportArgs(argc, argv, &args, &help);
      !why.empty()) {
    return UsageError("report", why);
  }
  if (help) {
    std::fputs(ReportUsage().c_str(), stdout);
    return 0;
  }
  if (args.diff) return DiffMain(args);

  std::string text, error;
  if (!ReadInput(args.inputs[0], &text, &error)) return Fail(error);
  ReportData data;
  if (!ParseReportJson(text, &data, &error)) {
    return Fail(absl::StrCat(args.inputs[0], ": ", error));
  }
  const std::string out = FindWriter(args.format)->render(data, args.max_leaks);
  if (!WriteOutput(args.output, out, &error)) return Fail(error);
  return 0;
}

}  // namespace gmt::cli
