// Writes the viz reports of the made-up sample (viz_sample_data.h) into a
// directory, for the checks that run outside C++: check_torch_snapshot.py
// reads the pickle with Python's own pickle module, check_html_chromium.py
// renders the page in headless Chromium.
//
//   viz_sample_writer DIR
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "lib/report/report.h"
#include "lib/report/report_output.h"
#include "tests/unit/viz_sample_data.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::perror(dir.c_str());
    return 1;
  }
  const gmt::ReportData data = gmt::MakeVizSample();
  struct {
    const char* name;
    std::string contents;
  } files[] = {
      {"sample.pickle", gmt::RenderTorchSnapshot(data)},
      {"sample.html", gmt::RenderHtml(data)},
      {"sample.trace.json", gmt::RenderChromeTrace(data)},
  };
  for (const auto& f : files) {
    std::string error;
    if (!gmt::WriteFileAtomically(dir + "/" + f.name, f.contents, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
  }
  return 0;
}
