// The memory-over-time section of a report (ReportData::Timeline), filled
// from a timeline snapshot (lib/registry/timeline.h): events, and per device a
// downsampled series of bytes in use. Pure functions.
#ifndef GMT_LIB_REPORT_TIMELINE_SECTION_H_
#define GMT_LIB_REPORT_TIMELINE_SECTION_H_

#include <cstddef>
#include <vector>

#include "lib/registry/timeline.h"
#include "lib/report/report.h"

namespace gmt {

// Fills `out` from `snapshot` (times become nanoseconds since the tool
// started): the events, and per device a series of bytes in use with at most
// about `max_points` points (DownsampleSeries), the coarse samples covering
// the span before the oldest event kept.
void FillReportTimeline(const TimelineSnapshot& snapshot, size_t max_points,
                        ReportData::Timeline* out);

// At most `max_points` points (>= 4) of a step series: the span is cut into
// max_points/2 equal time buckets and each keeps its highest point and its
// last one, so peaks survive and the level after each bucket is right.
std::vector<ReportData::Timeline::Point> DownsampleSeries(
    const std::vector<ReportData::Timeline::Point>& points, size_t max_points);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_TIMELINE_SECTION_H_
