#include "lib/leaks/growth.h"

namespace gmt {

void GrowthTracker::Update(StackId id, uint64_t bytes, int64_t time_ns,
                           std::vector<GrowthFlag>* newly) {
  auto [it, inserted] = sites_.try_emplace(id);
  Site& site = it->second;
  if (inserted) {
    // First sight of the site: the start of a run.
    site.run = GrowthFlag{id, 0, bytes, bytes, time_ns, time_ns};
    return;
  }
  if (bytes > site.run.last_bytes) {
    ++site.run.rises;
    site.run.last_bytes = bytes;
    site.run.last_ns = time_ns;
  } else {
    // Flat or shrinking: the run ends; a new one may start here.
    site.run = GrowthFlag{id, 0, bytes, bytes, time_ns, time_ns};
  }
  if (site.flagged) {
    // Keep the report's figures current while the site goes on rising.
    if (site.run.rises > 0) flagged_[site.flag_index] = site.run;
    return;
  }
  if (site.run.rises >= config_.rises &&
      site.run.last_bytes - site.run.first_bytes >= config_.min_bytes) {
    site.flagged = true;
    site.flag_index = flagged_.size();
    flagged_.push_back(site.run);
    newly->push_back(site.run);
  }
}

std::vector<GrowthFlag> GrowthTracker::AddSample(
    int64_t time_ns, const absl::flat_hash_map<StackId, uint64_t>& live) {
  ++samples_;
  std::vector<GrowthFlag> newly;
  for (const auto& [id, bytes] : live) Update(id, bytes, time_ns, &newly);
  // Sites with nothing live now: a run that falls to zero ends; unflagged ones
  // are forgotten so the table stays as small as the live set.
  for (auto it = sites_.begin(); it != sites_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    if (!it->second.flagged) {
      sites_.erase(it++);
      continue;
    }
    it->second.run = GrowthFlag{it->first, 0, 0, 0, time_ns, time_ns};
    ++it;
  }
  return newly;
}

std::vector<GrowthFlag> GrowthTracker::Flagged() const { return flagged_; }

}  // namespace gmt
