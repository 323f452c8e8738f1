// Helpers of the reliability tests, on top of tests/interpose's child-process
// support: figures printed by the test programs, directory listings, and a
// runner that starts a child with a file-size limit and pipes for its output.
#ifndef GMT_TESTS_RELIABILITY_RELIABILITY_UTIL_H_
#define GMT_TESTS_RELIABILITY_RELIABILITY_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {

// The "name value" pairs of the first line of `out` that starts with
// `tag` + " ": LineFigures("start hwm_kb 10 rss_kb 8\n", "start") is
// {{"hwm_kb", 10}, {"rss_kb", 8}}. Empty when there is no such line.
std::map<std::string, long> LineFigures(const std::string& out,
                                        const std::string& tag);

// Names of the entries of `dir` (not recursive), sorted.
std::vector<std::string> FileNames(const std::string& dir);

// Runs `program args...` under the tool in `dir` like RunProgram does, but
// with RLIMIT_FSIZE = `file_size_limit` bytes and SIGXFSZ ignored, so a write
// past the limit fails with EFBIG (a disk that fills up mid-write, without
// root). stdout and stderr are pipes, which the limit does not apply to.
// `gmt_options` may use <dir> like RunOptions::gmt_options.
RunResult RunWithFileSizeLimit(const std::string& program,
                               const std::vector<std::string>& args,
                               const std::string& dir,
                               const std::string& gmt_options,
                               long file_size_limit, int timeout_s = 120);

}  // namespace gmt_test

#endif  // GMT_TESTS_RELIABILITY_RELIABILITY_UTIL_H_
