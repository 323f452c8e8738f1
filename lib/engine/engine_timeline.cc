// The engine's side of the timeline (lib/registry/timeline.h): what is recorded, when,
// and how it reaches ReportData for the memory-over-time reports.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/core/clock.h"
#include "lib/engine/engine.h"
#include "lib/report/timeline_section.h"

namespace gmt {
namespace {

// Points per device in ReportData::Timeline::series: enough for a plot a few
// thousand pixels wide, small enough for the JSON report (~40 bytes a point).
constexpr size_t kSeriesPoints = 2000;

}  // namespace

uint64_t Engine::TimelineCapacity(const Options& options) {
  if (!options.enabled) return 0;
  // Only the reports that show memory over time read it; the JSON report
  // carries its series so that `gpumemtrace report FILE.json --format html`
  // still has a plot. text-only runs pay nothing.
  const ReportFormats& f = options.report;
  const bool wanted =
      f.Has(ReportFormat::kJson) || f.Has(ReportFormat::kHtml) ||
      f.Has(ReportFormat::kTrace) || f.Has(ReportFormat::kTorch);
  return wanted ? static_cast<uint64_t>(options.timeline_events) : 0;
}

void Engine::RecordTimeline(TimelineKind kind, const AllocationRecord& record) {
  // Registrations and reservations take no memory: not part of the picture.
  if (!timeline_.enabled() || !CountsTowardsUsage(record.kind)) return;
  timeline_.Record(
      kind, record.api, record.device, record.address, record.bytes,
      record.stream, record.stack,
      kind == TimelineKind::kAlloc ? record.thread : CurrentThreadIndex(),
      kind == TimelineKind::kAlloc ? record.time_ns : NowNs());
}

void Engine::FillTimeline(ReportData* data) {
  if (timeline_.enabled()) {
    FillReportTimeline(timeline_.Snapshot(), kSeriesPoints, &data->timeline);
  }
  // The blocks live now: the torch snapshot's segments, the HTML's call
  // sites. Cheap, so kept even with timeline_events=0.
  const ReportFormats& f = options_.report;
  const bool wants_live = f.Has(ReportFormat::kHtml) ||
                          f.Has(ReportFormat::kTrace) ||
                          f.Has(ReportFormat::kTorch);
  std::vector<StackId> ids;
  for (const AllocationRecord& r :
       wants_live ? LiveAllocations() : std::vector<AllocationRecord>{}) {
    if (!CountsTowardsUsage(r.kind)) continue;
    ReportData::Timeline::Block b;
    b.address = r.address;
    b.bytes = r.bytes;
    b.stream = r.stream;
    b.time_ns = SinceStartNs(r.time_ns);
    b.stack = r.stack;
    b.device = r.device;
    b.api = r.api;
    data->timeline.live.push_back(b);
    ids.push_back(r.stack);
  }
  for (const ReportData::Timeline::Event& e : data->timeline.events) {
    ids.push_back(e.stack);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  SymbolizeInto(ids, &data->stacks);
  if (data->timeline.dropped > 0) {
    data->notes.push_back(absl::StrCat(
        "timeline: kept the newest ", data->timeline.events.size(), " of ",
        data->timeline.recorded_events,
        " allocation/free events (timeline_events=", options_.timeline_events,
        "); the memory plot before them is sampled coarsely"));
  }
}

}  // namespace gmt
