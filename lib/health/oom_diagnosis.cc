#include "lib/health/oom_diagnosis.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/report/report.h"

namespace gmt {
namespace {

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0
             ? 0.0
             : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

OomDiagnosis DiagnoseOom(const OomInput& in,
                         absl::FunctionRef<std::string(StackId)> site_name) {
  OomDiagnosis d;
  d.device = in.device;
  d.requested = in.requested;
  d.device_free = in.device_free;
  d.device_total = in.device_total;
  d.meminfo_status = in.meminfo_status;

  // This process's blocks on the device, grouped by (call site, API).
  absl::flat_hash_map<std::pair<StackId, Api>, OomDiagnosis::Holder> sites;
  for (const AllocationRecord& r : in.live) {
    if (r.device != in.device) continue;
    if (r.kind != MemoryKind::kDevice && r.kind != MemoryKind::kManaged) {
      continue;
    }
    // What the block really takes from the card (redzones included).
    const uint64_t bytes = r.guarded() ? r.raw_bytes : r.bytes;
    OomDiagnosis::Holder& h = sites[{r.stack, r.api}];
    h.stack = r.stack;
    h.api = r.api;
    h.bytes += bytes;
    ++h.count;
    d.process_bytes += bytes;
    ++d.process_blocks;
  }
  std::vector<OomDiagnosis::Holder> holders;
  holders.reserve(sites.size());
  for (auto& [key, h] : sites) holders.push_back(h);
  std::sort(holders.begin(), holders.end(), [](const auto& a, const auto& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  });
  if (holders.size() > in.max_holders) {
    d.holders_omitted = holders.size() - in.max_holders;
    holders.resize(in.max_holders);
  }
  d.holders = std::move(holders);

  uint64_t others_bytes = 0;
  bool others_hidden = false;
  for (const ProcessUsage& p : in.processes) {
    if (p.pid == in.self_pid) continue;
    d.other_processes.push_back({p.pid, p.name, p.bytes});
    if (p.bytes) {
      others_bytes += *p.bytes;
    } else {
      others_hidden = true;
    }
  }
  std::sort(d.other_processes.begin(), d.other_processes.end(),
            [](const auto& a, const auto& b) {
              return a.bytes.value_or(0) > b.bytes.value_or(0);
            });
  d.other_processes_status = in.processes_status;

  // The reading: what failed, then who holds the card.
  std::string r = absl::StrFormat(
      "%s of %s failed on device %d%s", ApiName(in.api),
      HumanBytes(in.requested), in.device,
      in.device_name.empty() ? "" : absl::StrCat(" (", in.device_name, ")"));
  if (d.device_free && d.device_total) {
    absl::StrAppend(&r, ": ", HumanBytes(*d.device_free), " free of ",
                    HumanBytes(*d.device_total), ".");
  } else {
    absl::StrAppend(&r, " (free/total memory unknown: ", d.meminfo_status,
                    ").");
  }
  if (d.device_total && in.requested > *d.device_total) {
    absl::StrAppend(&r,
                    " The request is larger than the whole card: check "
                    "the size computation.");
  }
  const uint64_t total = d.device_total.value_or(0);
  if (total > 0) {
    absl::StrAppendFormat(
        &r, " This process holds %s (%.0f%% of the card) in %d block%s",
        HumanBytes(d.process_bytes), Percent(d.process_bytes, total),
        d.process_blocks, d.process_blocks == 1 ? "" : "s");
  } else {
    absl::StrAppendFormat(&r, " This process holds %s in %d block%s",
                          HumanBytes(d.process_bytes), d.process_blocks,
                          d.process_blocks == 1 ? "" : "s");
  }
  if (!d.holders.empty()) {
    const OomDiagnosis::Holder& top = d.holders.front();
    std::string site = site_name(top.stack);
    if (site.empty()) site = "an unknown call site";
    absl::StrAppendFormat(&r,
                          "; the largest holder is %s with %s in %d %s block%s",
                          site, HumanBytes(top.bytes), top.count,
                          ApiName(top.api), top.count == 1 ? "" : "s");
  }
  absl::StrAppend(&r, ".");
  if (in.processes_status != "ok") {
    absl::StrAppend(&r, " Other processes: not visible (", in.processes_status,
                    ").");
  } else if (d.other_processes.empty()) {
    absl::StrAppend(&r, " No other process uses this GPU.");
  } else {
    absl::StrAppendFormat(
        &r, " %d other process%s hold%s %s%s", d.other_processes.size(),
        d.other_processes.size() == 1 ? "" : "es",
        d.other_processes.size() == 1 ? "s" : "", HumanBytes(others_bytes),
        others_hidden ? " (some amounts hidden by NVML)" : "");
    const OomDiagnosis::OtherProcess& big = d.other_processes.front();
    if (big.bytes) {
      absl::StrAppendFormat(
          &r, "; the largest is pid %d%s with %s", big.pid,
          big.name.empty() ? "" : absl::StrCat(" (", big.name, ")"),
          HumanBytes(*big.bytes));
    }
    absl::StrAppend(&r, ".");
  }
  // The verdict: who to blame.
  if (total > 0 && d.device_free) {
    const uint64_t used = total - std::min(total, *d.device_free);
    if (Percent(d.process_bytes, total) >= 50) {
      absl::StrAppend(&r,
                      " This program itself filled the card: free what it "
                      "no longer needs, or use smaller batches.");
    } else if (others_bytes > d.process_bytes && others_bytes * 2 >= used) {
      absl::StrAppend(&r, " The card is mostly held by other processes.");
    } else if (*d.device_free >= in.requested) {
      absl::StrAppend(&r,
                      " Enough memory is free in total but not in one "
                      "piece (fragmentation), or a pool or VMM reservation "
                      "got in the way.");
    } else if (used > d.process_bytes + others_bytes) {
      absl::StrAppendFormat(
          &r,
          " %s in use is not in this process's tracked allocations "
          "(CUDA context, library workspaces, caching allocators).",
          HumanBytes(used - d.process_bytes - others_bytes));
    }
  }
  d.reading = std::move(r);
  return d;
}

bool OomBurstLimiter::ShouldReport(int device, int64_t now_ns,
                                   uint64_t* earlier_in_burst) {
  absl::MutexLock lock(&mu_);
  State& s = devices_[device];
  const bool first = s.last_ns == 0 || now_ns - s.last_ns >= quiet_ns_;
  s.last_ns = now_ns;
  if (first) {
    *earlier_in_burst = s.unreported;
    s.unreported = 0;
    return true;
  }
  ++s.unreported;
  ++suppressed_;
  return false;
}

uint64_t OomBurstLimiter::suppressed() const {
  absl::MutexLock lock(&mu_);
  return suppressed_;
}

}  // namespace gmt
