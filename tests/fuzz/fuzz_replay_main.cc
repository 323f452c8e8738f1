// The corpus-replay and mutation driver for a fuzz harness (fuzz_harness.h),
// for builds without libFuzzer (gcc, CI): GoogleTest tests that
//
//   CorpusReplay   run every file of the harness's seed corpus once;
//   Mutation       mutate corpus inputs (bit flips, byte edits, insertions
//                  of dictionary tokens, deletions, duplications, splices)
//                  and run them for GMT_FUZZ_SECONDS (default 5) seconds.
//
// Deterministic for a seed: GMT_FUZZ_SEED (default: from the clock; printed
// either way). A crash or failed invariant writes the input that caused it to
// $TMPDIR/gmt-fuzz-crash-<harness> (printed), to replay with libFuzzer or
// GMT_FUZZ_REPLAY=<file>.
//
// Compile definitions: GMT_FUZZ_NAME, GMT_FUZZ_CORPUS_DIR, GMT_FUZZ_DICT.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/fuzz_harness.h"

extern "C" void __sanitizer_set_death_callback(void (*callback)(void))
    __attribute__((weak));

namespace {

using Bytes = std::vector<uint8_t>;

// The input being run, for the crash handlers (async-signal-safe access).
const uint8_t* g_current = nullptr;
size_t g_current_size = 0;
char g_crash_path[4096] = "";

void DumpCurrentInput() {
  if (g_current == nullptr || g_crash_path[0] == '\0') return;
  int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < g_current_size) {
    ssize_t n = write(fd, g_current + done, g_current_size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  const char msg[] = "\n==fuzz== crashing input written to ";
  (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
  (void)!write(STDERR_FILENO, g_crash_path, strlen(g_crash_path));
  (void)!write(STDERR_FILENO, "\n", 1);
}

void OnCrash(int signal_number) {
  DumpCurrentInput();
  // SA_RESETHAND restored the default action: die of the same signal.
  raise(signal_number);
}

void InstallCrashHandlers() {
  const char* tmp = std::getenv("TMPDIR");
  std::snprintf(g_crash_path, sizeof(g_crash_path), "%s/gmt-fuzz-crash-%s",
                tmp && *tmp ? tmp : "/tmp", GMT_FUZZ_NAME);
  struct sigaction action = {};
  action.sa_handler = OnCrash;
  action.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int s : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) {
    sigaction(s, &action, nullptr);
  }
  if (&__sanitizer_set_death_callback != nullptr) {
    __sanitizer_set_death_callback(DumpCurrentInput);
  }
}

void RunOne(const Bytes& input) {
  g_current = input.data();
  g_current_size = input.size();
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_current = nullptr;
}

Bytes ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
}

std::vector<Bytes> Corpus() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(GMT_FUZZ_CORPUS_DIR)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Bytes> out;
  for (const auto& f : files) out.push_back(ReadBytes(f));
  return out;
}

// libFuzzer dictionary lines: name="value" with \\, \" and \xNN escapes.
std::vector<Bytes> Dictionary() {
  std::vector<Bytes> out;
  std::ifstream in(GMT_FUZZ_DICT);
  for (std::string line; std::getline(in, line);) {
    size_t open_quote = line.find('"');
    size_t close_quote = line.rfind('"');
    if (line.empty() || line[0] == '#' || open_quote == std::string::npos ||
        close_quote <= open_quote) {
      continue;
    }
    Bytes token;
    for (size_t i = open_quote + 1; i < close_quote; ++i) {
      if (line[i] == '\\' && i + 1 < close_quote) {
        if (line[i + 1] == 'x' && i + 3 < close_quote) {
          token.push_back(static_cast<uint8_t>(
              std::stoi(line.substr(i + 2, 2), nullptr, 16)));
          i += 3;
        } else {
          token.push_back(static_cast<uint8_t>(line[++i]));
        }
      } else {
        token.push_back(static_cast<uint8_t>(line[i]));
      }
    }
    out.push_back(std::move(token));
  }
  return out;
}

class Mutator {
 public:
  Mutator(uint64_t seed, std::vector<Bytes> corpus, std::vector<Bytes> dict)
      : rng_(seed), corpus_(std::move(corpus)), dict_(std::move(dict)) {}

  Bytes Next() {
    Bytes b = corpus_.empty() ? Bytes{} : corpus_[Below(corpus_.size())];
    const size_t edits = 1 + Below(6);
    for (size_t i = 0; i < edits; ++i) Edit(&b);
    if (b.size() > kMaxSize) b.resize(kMaxSize);
    return b;
  }

 private:
  static constexpr size_t kMaxSize = 4096;

  size_t Below(size_t n) { return n == 0 ? 0 : rng_() % n; }

  void Edit(Bytes* b) {
    switch (Below(8)) {
      case 0:  // flip a bit
        if (!b->empty()) (*b)[Below(b->size())] ^= 1u << Below(8);
        break;
      case 1:  // set a byte (interesting ones more often)
        if (!b->empty()) {
          static const uint8_t kInteresting[] = {0,   ':', '=', '%', 'p',
                                                 ' ', ',', '-', '9', 0xff};
          (*b)[Below(b->size())] =
              Below(2) ? kInteresting[Below(10)] : static_cast<uint8_t>(rng_());
        }
        break;
      case 2:  // insert a random byte
        b->insert(b->begin() + Below(b->size() + 1),
                  static_cast<uint8_t>(rng_()));
        break;
      case 3:  // delete a range
        if (!b->empty()) {
          size_t at = Below(b->size());
          size_t n = 1 + Below(std::min<size_t>(16, b->size() - at));
          b->erase(b->begin() + at, b->begin() + at + n);
        }
        break;
      case 4:
      case 5:  // insert a dictionary token
        if (!dict_.empty()) {
          const Bytes& t = dict_[Below(dict_.size())];
          b->insert(b->begin() + Below(b->size() + 1), t.begin(), t.end());
        }
        break;
      case 6:  // duplicate a range
        if (!b->empty()) {
          size_t at = Below(b->size());
          size_t n = 1 + Below(std::min<size_t>(64, b->size() - at));
          Bytes copy(b->begin() + at, b->begin() + at + n);
          b->insert(b->begin() + Below(b->size() + 1), copy.begin(),
                    copy.end());
        }
        break;
      default:  // splice with another corpus input
        if (!corpus_.empty()) {
          const Bytes& other = corpus_[Below(corpus_.size())];
          size_t keep = Below(b->size() + 1);
          b->resize(keep);
          size_t from = Below(other.size() + 1);
          b->insert(b->end(), other.begin() + from, other.end());
        }
        break;
    }
  }

  std::mt19937_64 rng_;
  std::vector<Bytes> corpus_;
  std::vector<Bytes> dict_;
};

class FuzzReplay : public testing::Test {
 protected:
  static void SetUpTestSuite() { InstallCrashHandlers(); }
};

TEST_F(FuzzReplay, CorpusReplay) {
  if (const char* one = std::getenv("GMT_FUZZ_REPLAY")) {
    RunOne(ReadBytes(one));
    return;
  }
  std::vector<Bytes> corpus = Corpus();
  ASSERT_FALSE(corpus.empty()) << "no seed corpus in " << GMT_FUZZ_CORPUS_DIR;
  for (const Bytes& input : corpus) RunOne(input);
  std::printf("%s: replayed %zu corpus inputs\n", GMT_FUZZ_NAME, corpus.size());
}

TEST_F(FuzzReplay, Mutation) {
  double seconds = 5;
  if (const char* s = std::getenv("GMT_FUZZ_SECONDS")) seconds = std::atof(s);
  uint64_t seed = static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("GMT_FUZZ_SEED"))
    seed = std::strtoull(s, nullptr, 0);
  std::printf("%s: mutating for %.1f s, GMT_FUZZ_SEED=%llu\n", GMT_FUZZ_NAME,
              seconds, static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  RecordProperty("seed", std::to_string(seed));
  Mutator mutator(seed, Corpus(), Dictionary());
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t runs = 0;
  do {
    for (int i = 0; i < 256; ++i, ++runs) RunOne(mutator.Next());
  } while (std::chrono::steady_clock::now() < deadline);
  std::printf("%s: %llu mutated inputs, no crash\n", GMT_FUZZ_NAME,
              static_cast<unsigned long long>(runs));
}

}  // namespace
