// The engine's side of the timeline (lib/registry/timeline.h): what is
// recorded, when, and the ring's contents for a report
// (lib/report/timeline_section.h turns them into the memory-over-time section).
#include "lib/core/clock.h"
#include "lib/engine/engine.h"

namespace gmt {

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

void Engine::TakeTimelineState(ReportState* state) {
  if (timeline_.enabled()) state->timeline = timeline_.Snapshot();
}

}  // namespace gmt
