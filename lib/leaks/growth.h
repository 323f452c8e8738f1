// Growth: call sites whose live bytes keep rising while the program runs,
// flagged as suspected leaks before exit (the way heaptrack shows leaks over
// time).
//
// The engine samples the live bytes of every call site (stack id) now and
// then (at synchronizing calls, at most once per growth_interval_ms) and feeds
// them here. A site is flagged once, when its live bytes rose at each of the
// last `rises` samples and by at least `min_bytes` over them. A sample that
// does not rise (equal or lower) restarts the count: caches that grow then
// plateau are not flagged; a loop that leaks a little every iteration is.
//
//   GrowthTracker tracker({/*rises=*/5, /*min_bytes=*/1 << 20});
//   for each sample: for (const GrowthFlag& f : tracker.AddSample(t, live))
//                      tell the user about f.site
//
// Thread safety: none; the engine serializes the calls.
#ifndef GMT_LIB_LEAKS_GROWTH_H_
#define GMT_LIB_LEAKS_GROWTH_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/stacks/stack_depot.h"

namespace gmt {

// One flagged site: the rising run of samples that made it suspect (kept up
// to date while it goes on rising).
struct GrowthFlag {
  StackId site = kNoStack;
  uint32_t rises = 0;        // consecutive rising samples
  uint64_t first_bytes = 0;  // live bytes at the start of the run
  uint64_t last_bytes = 0;   // live bytes at the latest sample
  int64_t first_ns = 0;      // sample times (the caller's clock)
  int64_t last_ns = 0;
};

class GrowthTracker {
 public:
  struct Config {
    uint32_t rises = 5;
    uint64_t min_bytes = 0;
  };
  explicit GrowthTracker(Config config) : config_(config) {}

  // One sample: the live bytes of every site that has any (sites absent have
  // none). Returns the sites flagged by this sample (each site only once).
  std::vector<GrowthFlag> AddSample(
      int64_t time_ns, const absl::flat_hash_map<StackId, uint64_t>& live);

  // Every site flagged so far, in the order they were flagged.
  std::vector<GrowthFlag> Flagged() const;
  uint64_t samples() const { return samples_; }

 private:
  struct Site {
    GrowthFlag run;  // the current rising run
    bool flagged = false;
    size_t flag_index = 0;  // into flagged_
  };
  void Update(StackId site, uint64_t bytes, int64_t time_ns,
              std::vector<GrowthFlag>* newly);

  const Config config_;
  absl::flat_hash_map<StackId, Site> sites_;
  std::vector<GrowthFlag> flagged_;
  uint64_t samples_ = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_LEAKS_GROWTH_H_
