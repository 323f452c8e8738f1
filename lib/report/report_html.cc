// One self-contained HTML report: inline CSS and JS, no network, so it opens
// from a file anywhere (CI artifacts, a laptop without access).
//
//   - summary (allocations, frees, live bytes, leaks, errors) and devices;
//   - per device a plot of bytes in use over time: <svg id="memory-plot-N">,
//     whose <path class="usage"> the inline script draws from the embedded
//     series (a step line; hovering shows time and bytes);
//   - top call sites by peak bytes in use (from the timeline events; without
//     them, by bytes live at the report);
//   - leaks and errors, each with its symbolized stack in a <details>.
// Every text from the program (argv, symbols, file names) is escaped; the
// embedded JSON has '<', '>' and '&' escaped so it cannot end its <script>.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "lib/report/block_fields.h"
#include "lib/report/leak_groups.h"
#include "lib/report/report.h"
#include "lib/report/report_viz_util.h"

namespace gmt {
namespace {

using nlohmann::json;

constexpr size_t kTopCallSites = 25;

std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : ValidUtf8(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// JSON safe inside <script>: no '<' (no "</script>", no "<!--").
std::string ScriptJson(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string DeviceName(const ReportData& data, int device) {
  if (device < 0) return "pinned host memory";
  for (const ReportData::Device& d : data.devices) {
    if (d.index == device && !d.name.empty()) {
      return absl::StrCat("GPU ", device, " (", d.name, ")");
    }
  }
  return absl::StrCat("GPU ", device);
}

std::string StackHtml(StackId id, const StackTable& stacks) {
  auto it = stacks.find(id);
  if (id == kNoStack || it == stacks.end() || it->second.empty()) {
    return "<span class=\"dim\">no stack</span>";
  }
  std::string out = "<ol class=\"stack\">";
  for (const SymbolizedFrame& f : it->second) {
    absl::StrAppend(&out, "<li>", Escape(FrameText(f)), "</li>");
  }
  absl::StrAppend(&out, "</ol>");
  return out;
}

// A call site's label with its stack folded under it.
std::string SiteHtml(StackId id, const StackTable& stacks, Api api) {
  return absl::StrCat("<details><summary>",
                      Escape(CallSiteLabel(id, stacks, api)), "</summary>",
                      StackHtml(id, stacks), "</details>");
}

struct CallSite {
  StackId stack = kNoStack;
  Api api = Api::kUnknown;
  uint64_t allocations = 0;
  uint64_t bytes_allocated = 0;
  uint64_t live = 0;  // running, while replaying events
  uint64_t peak = 0;
  uint64_t live_at_report = 0;
};

std::vector<CallSite> TopCallSites(const ReportData& data) {
  absl::flat_hash_map<StackId, CallSite> sites;
  absl::flat_hash_map<std::pair<int, uint64_t>, std::pair<StackId, uint64_t>>
      open;
  for (const auto& e : data.timeline.events) {
    if (!e.free) {
      CallSite& s = sites[e.stack];
      s.stack = e.stack;
      s.api = e.api;
      ++s.allocations;
      s.bytes_allocated += e.bytes;
      s.live += e.bytes;
      s.peak = std::max(s.peak, s.live);
      open[{e.device, e.address}] = {e.stack, e.bytes};
      continue;
    }
    auto it = open.find({e.device, e.address});
    if (it == open.end()) continue;
    CallSite& s = sites[it->second.first];
    s.live -= std::min(s.live, it->second.second);
    open.erase(it);
  }
  for (const auto& b : data.timeline.live) {
    CallSite& s = sites[b.stack];
    s.stack = b.stack;
    if (s.api == Api::kUnknown) s.api = b.api;
    s.live_at_report += b.bytes;
    s.peak = std::max(s.peak, s.live_at_report);
  }
  if (!data.timeline.recorded) {
    // A report without events (re-read from JSON): the leak list is what is
    // known of call sites.
    for (const ReportData::Leak& l : data.leaks) {
      CallSite& s = sites[l.stack];
      s.stack = l.stack;
      s.api = l.api;
      s.allocations += l.count;
      s.live_at_report += l.bytes;
      s.peak = std::max(s.peak, s.live_at_report);
    }
  }
  std::vector<CallSite> out;
  for (auto& [id, s] : sites) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) {
    if (a.peak != b.peak) return a.peak > b.peak;
    return a.stack < b.stack;
  });
  if (out.size() > kTopCallSites) out.resize(kTopCallSites);
  return out;
}

constexpr absl::string_view kStyle = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.dim{color:#888}.err{color:#b00}
ol.stack{margin:.3em 0;padding-left:2.2em;font:12px monospace}
summary{cursor:pointer}
svg.plot{border:1px solid #ccc;background:#fcfcff}
svg.plot path.usage{fill:none;stroke:#1f5fbf;stroke-width:1.5}
svg.plot path.area{fill:#1f5fbf22;stroke:none}
svg.plot text{font:11px sans-serif;fill:#555}
svg.plot line.grid{stroke:#e4e4ee}
.tip{font:12px monospace;min-height:1.2em}
)css";

// Draws every <svg class="plot"> from window.GMT_DATA.series[data-device].
constexpr absl::string_view kScript = R"js(
(function(){
var data=JSON.parse(document.getElementById('gmt-data').textContent);
function human(b){var u=['B','KiB','MiB','GiB','TiB'],i=0;
 while(b>=1024&&i<u.length-1){b/=1024;i++;}return (i?b.toFixed(1):b)+' '+u[i];}
function secs(ns){return (ns/1e9).toFixed(3)+' s';}
var NS='http://www.w3.org/2000/svg';
function el(p,n,a){var e=document.createElementNS(NS,n);for(var k in a)e.setAttribute(k,a[k]);p.appendChild(e);return e;}
document.querySelectorAll('svg.plot').forEach(function(svg){
 var pts=data.series[svg.getAttribute('data-device')]||[];
 var W=+svg.getAttribute('width'),H=+svg.getAttribute('height'),L=70,R=10,T=10,B=25;
 if(!pts.length){el(svg,'text',{x:L,y:H/2}).textContent='no timeline data';return;}
 var t0=pts[0][0],t1=pts[pts.length-1][0],ymax=1;
 pts.forEach(function(p){if(p[1]>ymax)ymax=p[1];});
 if(t1<=t0)t1=t0+1;
 function X(t){return L+(t-t0)/(t1-t0)*(W-L-R);}
 function Y(v){return H-B-v/ymax*(H-T-B);}
 for(var g=0;g<=4;g++){var v=ymax*g/4;
  el(svg,'line',{'class':'grid',x1:L,x2:W-R,y1:Y(v),y2:Y(v)});
  el(svg,'text',{x:2,y:Y(v)+4}).textContent=human(Math.round(v));}
 el(svg,'text',{x:L,y:H-6}).textContent=secs(t0);
 el(svg,'text',{x:W-R-60,y:H-6}).textContent=secs(t1);
 var d='M'+X(pts[0][0]).toFixed(1)+','+Y(pts[0][1]).toFixed(1);
 for(var i=1;i<pts.length;i++){d+='H'+X(pts[i][0]).toFixed(1)+'V'+Y(pts[i][1]).toFixed(1);}
 el(svg,'path',{'class':'area',d:d+'V'+Y(0)+'H'+X(pts[0][0]).toFixed(1)+'Z'});
 el(svg,'path',{'class':'usage',d:d});
 var tip=document.getElementById(svg.id+'-tip');
 svg.addEventListener('mousemove',function(ev){
  var r=svg.getBoundingClientRect(),t=t0+(ev.clientX-r.left-L)/(W-L-R)*(t1-t0),v=pts[0][1];
  for(var i=0;i<pts.length&&pts[i][0]<=t;i++)v=pts[i][1];
  if(tip)tip.textContent=secs(t)+'  '+human(v);});
 svg.setAttribute('data-drawn',pts.length);
});
})();
)js";

class HtmlWriter {
 public:
  explicit HtmlWriter(const ReportData& data) : data_(data) {}

  std::string Write() {
    Head();
    Summary();
    Plots();
    CallSites();
    Leaks();
    Errors();
    Notes();
    Tail();
    return std::move(out_);
  }

 private:
  template <typename... Args>
  void Add(const Args&... args) {
    absl::StrAppend(&out_, args...);
  }

  void Head() {
    Add("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>gpumemtrace report, pid ",
        data_.pid, "</title><style>", kStyle, "</style></head><body>\n");
    Add("<h1>gpumemtrace report</h1><p>",
        Escape(absl::StrJoin(data_.argv, " ")), " <span class=\"dim\">(pid ",
        data_.pid, ", ", Escape(data_.reason), " report, gpumemtrace ",
        Escape(data_.version), ")</span></p>\n");
  }

  void Summary() {
    const auto& s = data_.summary;
    Add("<h2>Summary</h2><table id=\"summary\">");
    auto row = [&](absl::string_view name, const std::string& value) {
      Add("<tr><th>", name, "</th><td class=\"n\">", value, "</td></tr>");
    };
    row("allocations", absl::StrCat(s.allocations));
    row("frees", absl::StrCat(s.frees));
    row("bytes live at report", Escape(HumanBytes(s.live_bytes_at_exit)));
    const LeakedReservations reserved = CountLeakedReservations(data_.leaks);
    row("leaked blocks",
        absl::StrCat(
            s.leaks, " (", Escape(HumanBytes(s.leaked_bytes)), ")",
            reserved.count == 0
                ? ""
                : absl::StrCat(", of which ", reserved.count, " address range",
                               reserved.count == 1 ? "" : "s", " (",
                               Escape(HumanBytes(reserved.bytes)),
                               " of address space, not memory)")));
    if (const LeakStates states = CountLeakStates(data_.leaks);
        states.analysed) {
      row("of them",
          absl::StrCat(states.lost, " definitely lost (",
                       Escape(HumanBytes(states.lost_bytes)), "), ",
                       states.reachable, " still reachable at exit (",
                       Escape(HumanBytes(states.reachable_bytes)), ")",
                       states.unknown == 0
                           ? ""
                           : absl::StrCat(", ", states.unknown, " unknown")));
    }
    row("errors", absl::StrCat(s.errors));
    Add("</table>\n<table id=\"devices\"><tr><th>device</th>"
        "<th class=\"n\">total</th><th class=\"n\">peak in use</th>"
        "<th class=\"n\">in use at report</th><th class=\"n\">allocations"
        "</th><th class=\"n\">frees</th></tr>");
    std::vector<ReportData::Device> devices = data_.devices;
    if (data_.host.allocations > 0) devices.push_back(data_.host);
    for (const ReportData::Device& d : devices) {
      Add("<tr><td>", Escape(DeviceName(data_, d.index)),
          "</td><td class=\"n\">",
          d.total_bytes ? Escape(HumanBytes(d.total_bytes)) : "", "</td>",
          "<td class=\"n\">", Escape(HumanBytes(d.peak_bytes)), "</td>",
          "<td class=\"n\">", Escape(HumanBytes(d.live_bytes)), "</td>",
          "<td class=\"n\">", d.allocations, "</td><td class=\"n\">", d.frees,
          "</td></tr>");
    }
    Add("</table>\n");
  }

  void Plots() {
    Add("<h2>Memory in use over time</h2>\n");
    const auto& t = data_.timeline;
    if (t.series.empty()) {
      Add("<p class=\"dim\">No timeline was recorded (timeline_events=0, "
          "or report=text only).</p>\n");
    }
    if (t.dropped > 0) {
      Add("<p class=\"dim\">The timeline kept the newest ", t.events.size(),
          " of ", t.recorded_events,
          " events; before them the plot is sampled coarsely.</p>\n");
    }
    json series = json::object();
    for (const auto& [device, points] : t.series) {
      json p = json::array();
      for (const auto& point : points) {
        p.push_back({point.time_ns, point.live_bytes});
      }
      series[absl::StrCat(device)] = std::move(p);
      const std::string id = absl::StrCat(
          "memory-plot-", device < 0 ? "host" : absl::StrCat(device));
      Add("<h3>", Escape(DeviceName(data_, device)), "</h3>\n<svg id=\"", id,
          "\" class=\"plot\" data-device=\"", device,
          "\" width=\"960\" height=\"260\" "
          "xmlns=\"http://www.w3.org/2000/svg\">"
          "</svg><div class=\"tip\" id=\"",
          id, "-tip\"></div>\n");
    }
    json embedded = {{"series", std::move(series)}};
    Add("<script type=\"application/json\" id=\"gmt-data\">",
        ScriptJson(embedded), "</script>\n");
  }

  void CallSites() {
    std::vector<CallSite> sites = TopCallSites(data_);
    Add("<h2>Top call sites by peak bytes in use</h2>\n");
    if (sites.empty()) {
      Add("<p class=\"dim\">none</p>\n");
      return;
    }
    Add("<table id=\"call-sites\"><tr><th>call site</th><th>api</th>"
        "<th class=\"n\">peak in use</th><th class=\"n\">in use at report</th>"
        "<th class=\"n\">allocations</th><th class=\"n\">bytes allocated</th>"
        "</tr>\n");
    for (const CallSite& s : sites) {
      Add("<tr><td>", SiteHtml(s.stack, data_.stacks, s.api), "</td><td>",
          Escape(ApiName(s.api)), "</td><td class=\"n\">",
          Escape(HumanBytes(s.peak)), "</td><td class=\"n\">",
          Escape(HumanBytes(s.live_at_report)), "</td><td class=\"n\">",
          s.allocations, "</td><td class=\"n\">",
          Escape(HumanBytes(s.bytes_allocated)), "</td></tr>\n");
    }
    Add("</table>\n");
  }

  void Leaks() {
    Add("<h2>Leaks</h2>\n");
    if (data_.leaks.empty()) {
      Add("<p class=\"dim\">",
          data_.leak_check ? "none" : "leak_check=0: not checked", "</p>\n");
      return;
    }
    Add("<table id=\"leaks\"><tr><th>call site</th><th>api</th>"
        "<th>device</th><th class=\"n\">blocks</th><th class=\"n\">bytes</th>"
        "<th>example</th><th>released by</th></tr>\n");
    for (const ReportData::Leak& l : data_.leaks) {
      Add("<tr><td>", SiteHtml(l.stack, data_.stacks, l.api), "</td><td>",
          Escape(ApiName(l.api)), "</td><td>",
          Escape(DeviceName(data_, l.device)), "</td><td class=\"n\">", l.count,
          "</td><td class=\"n\">", Escape(HumanBytes(l.bytes)), "</td><td>",
          Hex(l.address), "</td><td>", Escape(l.released_by), "</td></tr>\n");
    }
    Add("</table>\n");
  }

  void Errors() {
    Add("<h2>Errors</h2>\n");
    if (data_.errors.empty()) {
      Add("<p class=\"dim\">none</p>\n");
      return;
    }
    Add("<table id=\"errors\"><tr><th>kind</th><th>what</th><th>where</th>"
        "<th>allocation</th></tr>\n");
    for (const ErrorRecord& e : data_.errors) {
      std::string what = Escape(e.detail);
      if (!e.kernels.empty()) {
        absl::StrAppend(&what, "<br><span class=\"dim\">kernels: ",
                        Escape(absl::StrJoin(e.kernels, "; ")), "</span>");
      }
      std::string allocation = "<span class=\"dim\">unknown</span>";
      if (e.allocation) {
        allocation = absl::StrCat(Escape(ApiName(e.allocation->api)), " ",
                                  Escape(HumanBytes(e.allocation->bytes)),
                                  " at ", Hex(e.allocation->address),
                                  StackHtml(e.allocation->stack, data_.stacks));
      }
      Add("<tr><td class=\"err\">", Escape(ErrorKindName(e.kind)), "</td><td>",
          what, "</td><td>", Escape(ApiName(e.api)), " ", Hex(e.address),
          StackHtml(e.stack, data_.stacks), "</td><td>", allocation,
          "</td></tr>\n");
    }
    Add("</table>\n");
    if (data_.errors_dropped > 0) {
      Add("<p>", data_.errors_dropped, " more errors were not stored.</p>\n");
    }
  }

  void Notes() {
    if (data_.notes.empty()) return;
    Add("<h2>Notes</h2><ul>");
    for (const std::string& n : data_.notes) Add("<li>", Escape(n), "</li>");
    Add("</ul>\n");
  }

  void Tail() { Add("<script>", kScript, "</script>\n</body></html>\n"); }

  const ReportData& data_;
  std::string out_;
};

}  // namespace

std::string RenderHtml(const ReportData& data) {
  return HtmlWriter(data).Write();
}

}  // namespace gmt
