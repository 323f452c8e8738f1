#include "lib/report/timeline_section.h"

#include <algorithm>
#include <map>

#include "lib/core/clock.h"

namespace gmt {

std::vector<ReportData::Timeline::Point> DownsampleSeries(
    const std::vector<ReportData::Timeline::Point>& points, size_t max_points) {
  using Point = ReportData::Timeline::Point;
  max_points = std::max<size_t>(max_points, 4);
  if (points.size() <= max_points) return points;
  const size_t buckets = max_points / 2;
  const int64_t first = points.front().time_ns;
  const int64_t span = std::max<int64_t>(1, points.back().time_ns - first + 1);
  std::vector<Point> out;
  out.reserve(max_points);
  size_t i = 0;
  while (i < points.size()) {
    const size_t bucket = static_cast<size_t>(
        static_cast<__int128>(points[i].time_ns - first) * buckets / span);
    size_t peak = i;
    size_t last = i;
    for (; i < points.size(); ++i) {
      const size_t b = static_cast<size_t>(
          static_cast<__int128>(points[i].time_ns - first) * buckets / span);
      if (b != bucket) break;
      if (points[i].live_bytes > points[peak].live_bytes) peak = i;
      last = i;
    }
    out.push_back(points[peak]);
    if (last != peak) out.push_back(points[last]);
  }
  return out;
}

void FillReportTimeline(const TimelineSnapshot& snapshot, size_t max_points,
                        ReportData::Timeline* out) {
  using Point = ReportData::Timeline::Point;
  out->recorded = snapshot.capacity > 0;
  out->capacity = snapshot.capacity;
  out->recorded_events = snapshot.recorded;
  out->dropped = snapshot.dropped;
  out->events.clear();
  out->events.reserve(snapshot.events.size());
  std::map<int, std::vector<Point>> raw;
  // Before the oldest event kept, only the coarse samples know the level.
  if (snapshot.dropped > 0) {
    const int64_t oldest =
        snapshot.events.empty() ? INT64_MAX : snapshot.events.front().time_ns;
    for (const TimelineSample& s : snapshot.samples) {
      if (s.time_ns >= oldest) break;
      raw[s.device].push_back(Point{SinceStartNs(s.time_ns), s.live_bytes});
    }
  }
  for (const TimelineEvent& e : snapshot.events) {
    std::vector<Point>& points = raw[e.device];
    if (points.empty()) points.reserve(snapshot.events.size() / 2);
    ReportData::Timeline::Event r;
    r.time_ns = SinceStartNs(e.time_ns);
    r.address = e.address;
    r.bytes = e.bytes;
    r.stream = e.stream;
    r.live_bytes = e.live_bytes;
    r.stack = e.stack;
    r.thread = e.thread;
    r.device = e.device;
    r.api = e.api;
    r.free = e.kind == TimelineKind::kFree;
    out->events.push_back(r);
    points.push_back(Point{r.time_ns, r.live_bytes});
  }
  out->series.clear();
  for (auto& [device, points] : raw) {
    out->series[device] = DownsampleSeries(points, max_points);
  }
}

}  // namespace gmt
