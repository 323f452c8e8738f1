// The human-readable report: ASan-like, one prefix per line so it greps apart
// from the program's own output.
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "lib/core/clock.h"
#include "lib/report/health_render.h"
#include "lib/report/leak_groups.h"
#include "lib/report/report.h"
#include "lib/report/report_crash.h"
#include "lib/report/text_out.h"
#include "lib/stacks/python_frames.h"

namespace gmt {
namespace {

// `data`: the report the thread number comes from (nullptr: this process).
std::string ThreadLabel(uint32_t thread, const ReportData* data) {
  int os =
      data != nullptr ? ReportThreadOsId(*data, thread) : ThreadOsId(thread);
  return os != 0 ? absl::StrFormat("T%d (tid %d)", thread, os)
                 : absl::StrFormat("T%d", thread);
}

void PrintStack(TextOut& out, StackId id, const StackTable& stacks) {
  auto it = stacks.find(id);
  if (id == kNoStack || it == stacks.end() || it->second.empty()) {
    out.Line("    (no stack: stack_depth=0 or capture failed)");
    return;
  }
  int i = 0;
  for (const SymbolizedFrame& f : it->second) {
    std::string where = f.function.empty() ? "??" : f.function;
    std::string loc;
    if (!f.file.empty()) loc = absl::StrCat(" ", f.file, ":", f.line);
    if (IsPythonFrame(f.address)) {  // no code address to show
      out.Line("    #%d in %s%s (python)", i++, where, loc);
      continue;
    }
    out.Line("    #%d 0x%x in %s%s (%s)", i++, f.address, where, loc,
             f.module.empty() ? "?" : f.module);
  }
}

void PrintError(TextOut& out, const ErrorRecord& e, const StackTable& stacks,
                const ReportData* data) {
  out.Line("ERROR: %s: %s", ErrorKindName(e.kind), ErrorKindMeaning(e.kind));
  out.Line("  %s", e.detail);
  if (!e.cuda_result_name.empty() || e.cuda_result != 0) {
    out.Line("  CUDA returned %d (%s) to the program", e.cuda_result,
             e.cuda_result_name.empty() ? "?" : e.cuda_result_name);
  }
  if (e.has_range) {
    // Found by a canary check: there is no call stack of the bad write, but
    // there are the kernels that may have made it.
    if (e.kernels.empty()) {
      out.Line(
          "  found %s; no kernel launch was seen since the last clean check",
          FoundBy(e));
    } else {
      out.Line("  found %s; %s:", FoundBy(e),
               e.kernels.size() == 1 && e.kernels_omitted == 0
                   ? "written by kernel"
                   : "kernels run since the last clean check (newest last)");
      for (const std::string& k : e.kernels) out.Line("    %s", k);
      if (e.kernels_omitted > 0) {
        out.Line("    ... and %d older launches", e.kernels_omitted);
      }
      if (e.suspects_checked) {
        out.Line(
            "  these kernels are now checked after each launch "
            "(suspect_checks): if the write repeats, the next report names "
            "the one that made it");
      }
    }
  } else {
    out.Line("  %s called by thread %s here:",
             e.call.empty() ? std::string(ApiName(e.api)) : e.call,
             ThreadLabel(e.thread, data));
    PrintStack(out, e.stack, stacks);
  }
  if (e.previous_free) {
    out.Line("  first freed by %s on thread %s here:",
             ApiName(e.previous_free->free_api),
             ThreadLabel(e.previous_free->free_thread, data));
    PrintStack(out, e.previous_free->free_stack, stacks);
  }
  if (e.oom) {  // Who holds the card, largest first
    const OomDiagnosis& o = *e.oom;
    for (size_t i = 0; i < o.holders.size(); ++i) {
      const OomDiagnosis::Holder& h = o.holders[i];
      out.Line("  holder #%d: %s in %d %s block%s, allocated here:", i + 1,
               HumanBytes(h.bytes), h.count, ApiName(h.api),
               h.count == 1 ? "" : "s");
      PrintStack(out, h.stack, stacks);
    }
    if (o.holders_omitted > 0) {
      out.Line("  ... and %d smaller call sites", o.holders_omitted);
    }
    for (const OomDiagnosis::OtherProcess& p : o.other_processes) {
      out.Line("  other process: pid %d %s: %s", p.pid,
               p.name.empty() ? "?" : p.name,
               p.bytes ? HumanBytes(*p.bytes) : std::string("amount hidden"));
    }
  }
  if (e.allocation) {
    const AllocationRecord& a = *e.allocation;
    // A pool's NVTX region was registered, not allocated.
    const bool region = a.api == Api::kNvtxRegion;
    out.Line("  the %s: 0x%x, %d bytes, %s on %s, %s by thread %s here:",
             region ? "region" : "block", a.address, a.bytes, ApiName(a.api),
             DeviceLabel(a.device), region ? "registered" : "allocated",
             ThreadLabel(a.thread, data));
    PrintStack(out, a.stack, stacks);
  }
  if (!e.suppression.empty()) out.Line("  to suppress: %s", e.suppression);
}

// " (2 of them address ranges: 675 GB of address space, not memory)" for
// the summary line: leaked reservations count as blocks, not as bytes.
std::string ReservationsNote(const std::vector<ReportData::Leak>& leaks) {
  const LeakedReservations reserved = CountLeakedReservations(leaks);
  if (reserved.count == 0) return "";
  return absl::StrFormat(
      " (%d of them address range%s: %s of address space, "
      "not memory)",
      reserved.count, reserved.count == 1 ? "" : "s",
      HumanBytes(reserved.bytes));
}

}  // namespace

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  // 1023.96 would print as "1024.0": move up a unit before it does.
  while (value >= 1023.95 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

int ReportThreadOsId(const ReportData& data, uint32_t thread) {
  if (!data.thread_os_ids.has_value()) return ThreadOsId(thread);
  auto it = data.thread_os_ids->find(thread);
  return it == data.thread_os_ids->end() ? 0 : it->second;
}

std::string RenderErrorText(const ErrorRecord& error, const StackTable& stacks,
                            int pid) {
  TextOut out(pid);
  PrintError(out, error, stacks, /*data=*/nullptr);
  out.Blank();
  return out.Take();
}

namespace {

// What the reachability scan made of the leaked blocks, for the summary: a
// cache that holds its memory to the end reads apart from memory the
// program lost. Empty when the scan did not run.
std::string LeakStatesNote(const ReportData& data) {
  const LeakStates s = CountLeakStates(data.leaks);
  if (!s.analysed || data.summary.leaks == 0) return "";
  if (s.lost == 0 && s.unknown == 0 && s.reachable == data.summary.leaks) {
    return data.summary.leaks == 1
               ? ", still reachable at exit (not lost)"
               : ", all still reachable at exit (none lost)";
  }
  std::string out = absl::StrFormat(
      ": %d definitely lost (%s), %d still reachable (%s)", s.lost,
      HumanBytes(s.lost_bytes), s.reachable, HumanBytes(s.reachable_bytes));
  if (s.unknown > 0) {
    absl::StrAppend(&out, absl::StrFormat(", %d unknown (%s)", s.unknown,
                                          HumanBytes(s.unknown_bytes)));
  }
  return out;
}

// The last line of every text report, the one CI greps.
std::string SummaryLine(const ReportData& data) {
  std::map<absl::string_view, int> by_kind;
  for (const ErrorRecord& e : data.errors) ++by_kind[ErrorKindName(e.kind)];
  std::string kinds;
  for (const auto& [kind, n] : by_kind) {
    absl::StrAppend(&kinds, kinds.empty() ? " (" : ", ", n, " ", kind);
  }
  if (!kinds.empty()) kinds += ")";
  std::string leaks =
      data.leak_check
          ? absl::StrFormat("%d leaked block%s (%s)%s%s", data.summary.leaks,
                            data.summary.leaks == 1 ? "" : "s",
                            HumanBytes(data.summary.leaked_bytes),
                            ReservationsNote(data.leaks), LeakStatesNote(data))
          : std::string("leak check off");
  // Suppressions (lib/report/suppressions.h): say what the rules hid.
  std::string suppressed;
  if (data.summary.suppressed_errors > 0 || data.summary.suppressed_leaks > 0) {
    suppressed = absl::StrFormat("; suppressed: %d error%s, %d leaked block%s",
                                 data.summary.suppressed_errors,
                                 data.summary.suppressed_errors == 1 ? "" : "s",
                                 data.summary.suppressed_leaks,
                                 data.summary.suppressed_leaks == 1 ? "" : "s");
  }
  return absl::StrFormat("SUMMARY: %d error%s%s, %s%s", data.summary.errors,
                         data.summary.errors == 1 ? "" : "s", kinds, leaks,
                         suppressed);
}

}  // namespace

std::string RenderText(const ReportData& data, int64_t max_leaks,
                       bool errors_printed) {
  TextOut out(data.pid);
  out.Line(
      "gpumemtrace %s report (%s) for %s", data.version, data.reason,
      data.argv.empty() ? std::string("?") : absl::StrJoin(data.argv, " "));
  for (const ReportData::Device& d : data.devices) {
    std::string name = d.name.empty() ? "" : absl::StrCat(" ", d.name);
    std::string total =
        d.total_bytes ? absl::StrCat(" (", HumanBytes(d.total_bytes), ")") : "";
    out.Line("device %d%s%s: %d allocations, %d frees, peak %s, in use %s",
             d.index, name, total, d.allocations, d.frees,
             HumanBytes(d.peak_bytes), HumanBytes(d.live_bytes));
  }
  if (data.host.allocations > 0) {
    out.Line("pinned host: %d allocations, %d frees, peak %s, in use %s",
             data.host.allocations, data.host.frees,
             HumanBytes(data.host.peak_bytes),
             HumanBytes(data.host.live_bytes));
  }
  if (data.devices.empty() && data.host.allocations == 0) {
    out.Line("no CUDA allocations were seen");
  }
  for (const std::string& note : data.notes) out.Line("note: %s", note);
  // GPU health (NVML): status per device, warnings, Xid events.
  for (absl::string_view line : absl::StrSplit(
           ReportHealthText(data.health_read && !data.devices.empty(),
                            data.health),
           '\n', absl::SkipEmpty())) {
    out.Line("%s", line);
  }
  // The crash report.
  if (data.crash.present) {
    out.Blank();
    for (const std::string& line : CrashTextLines(data)) out.Line("%s", line);
    if (data.crash.stack != kNoStack) {
      out.Line("  stack of the crashing thread (innermost first):");
      PrintStack(out, data.crash.stack, data.stacks);
    }
  }

  if (!data.errors.empty()) {
    out.Blank();
    for (const ErrorRecord& e : data.errors) {
      if (errors_printed) {
        out.Line("ERROR: %s: %s (details above)", ErrorKindName(e.kind),
                 e.detail);
        continue;
      }
      PrintError(out, e, data.stacks, &data);
      out.Blank();
    }
    if (data.errors_dropped > 0) {
      out.Line("(%d more errors not stored)", data.errors_dropped);
    }
  }

  if (data.leak_check && !data.leaks.empty()) {
    out.Blank();
    out.Line("LEAKS: %d blocks, %s, from %d call sites (largest first)",
             data.summary.leaks, HumanBytes(data.summary.leaked_bytes),
             data.leaks.size());
    // Regions are counted as leaked blocks, their bytes not.
    uint64_t regions = 0;
    uint64_t region_bytes = 0;
    for (const ReportData::Leak& leak : data.leaks) {
      if (leak.api != Api::kNvtxRegion) continue;
      regions += leak.count;
      region_bytes += leak.bytes;
    }
    if (regions > 0) {
      out.Line(
          "of which %d NVTX region%s of pool allocators, %s (inside the "
          "pools' blocks, so not added to the bytes)",
          regions, regions == 1 ? "" : "s", HumanBytes(region_bytes));
    }
    const LeakedReservations reserved = CountLeakedReservations(data.leaks);
    if (reserved.count > 0) {
      out.Line(
          "of which %d address range%s reserved with cuMemAddressReserve and "
          "never freed, %s of virtual address space (not memory, so not added "
          "to the bytes)",
          reserved.count, reserved.count == 1 ? "" : "s",
          HumanBytes(reserved.bytes));
    }
    // What the reachability scan made of them, and its cost.
    const ReportData::Reachability& r = data.reachability;
    if (r.ran) {
      out.Line(
          "reachability: definitely lost %s in %d blocks, still reachable %s "
          "in %d blocks%s (scan: %.1f ms, %s read, %d heap objects%s)",
          HumanBytes(r.lost_bytes), r.lost_blocks,
          HumanBytes(r.reachable_bytes), r.reachable_blocks,
          r.unknown_blocks > 0
              ? absl::StrFormat(", unknown %s in %d blocks",
                                HumanBytes(r.unknown_bytes), r.unknown_blocks)
              : std::string(),
          r.ms, HumanBytes(r.bytes_scanned), r.heap_chunks,
          r.truncated ? ", truncated" : "");
    }
    int64_t shown = 0;
    for (const ReportData::Leak& leak : data.leaks) {
      if (max_leaks > 0 && shown == max_leaks) {
        out.Line("... %d more call sites (max_leaks=%d)",
                 static_cast<int64_t>(data.leaks.size()) - shown, max_leaks);
        break;
      }
      ++shown;
      std::string released = leak.released_by.empty()
                                 ? ""
                                 : absl::StrCat(", never freed (released by ",
                                                leak.released_by, ")");
      // The reachability verdict, where there is one.
      std::string state;
      if (leak.state == "lost") state = " [definitely lost]";
      if (leak.state == "reachable") state = " [still reachable]";
      if (leak.state == "unknown") state = " [reachability unknown]";
      // A pool's NVTX regions are regions, registered.
      const bool region = leak.api == Api::kNvtxRegion;
      const bool reservation = leak.kind == MemoryKind::kVmmReservation;
      out.Line("LEAK: %s%s in %d %s%s from %s (%s) on %s%s%s, %s here:",
               HumanBytes(leak.bytes), reservation ? " of address space" : "",
               leak.count,
               region        ? "region"
               : reservation ? "range"
                             : "block",
               leak.count == 1 ? "" : "s", ApiName(leak.api),
               MemoryKindName(leak.kind), DeviceLabel(leak.device), released,
               state, region ? "registered" : "allocated");
      if (!leak.reachable_via.empty()) {  // Why it counts
        out.Line("  reachable via %s", leak.reachable_via);
      }
      if (!leak.nvtx_range.empty()) {
        out.Line("  in NVTX range %s", leak.nvtx_range);
      }
      // Pool allocators' NVTX regions.
      if (leak.api == Api::kNvtxRegion) {
        std::string named = leak.region_name.empty()
                                ? ""
                                : absl::StrCat(" '", leak.region_name, "'");
        std::string heap =
            leak.heap == 0 ? std::string(" (process-wide heap)")
                           : absl::StrFormat(
                                 " (heap 0x%x%s)", leak.heap,
                                 leak.heap_name.empty()
                                     ? ""
                                     : absl::StrCat(" '", leak.heap_name, "'"));
        if (leak.pool_block != 0) {
          out.Line(
              "  NVTX region%s of a pool%s inside the %s block 0x%x "
              "(its bytes are part of that block's)",
              named, heap, ApiName(leak.pool_api), leak.pool_block);
        } else {
          out.Line("  NVTX region%s%s outside any tracked block", named, heap);
        }
      }
      if (leak.nvtx_regions > 0) {
        out.Line(
            "  %s of it in %d live NVTX region%s of a pool (listed as "
            "their own leaks)",
            HumanBytes(leak.nvtx_region_bytes), leak.nvtx_regions,
            leak.nvtx_regions == 1 ? "" : "s");
      }
      PrintStack(out, leak.stack, data.stacks);
      if (!leak.suppression.empty()) {
        out.Line("  to suppress: %s", leak.suppression);
      }
    }
  }

  // Memory by NVTX range (the ranges open when it was allocated).
  if (!data.nvtx_ranges.empty()) {
    out.Blank();
    out.Line("BY NVTX RANGE: allocated in all / still live");
    for (const ReportData::NvtxRange& r : data.nvtx_ranges) {
      out.Line("  %s: %d allocation%s, %s; live %s in %d block%s", r.name,
               r.allocations, r.allocations == 1 ? "" : "s",
               HumanBytes(r.bytes), HumanBytes(r.live_bytes), r.live_blocks,
               r.live_blocks == 1 ? "" : "s");
    }
  }

  // Pool allocators' NVTX memory-API calls.
  if (data.nvtx_mem.used) {
    const ReportData::NvtxMem& m = data.nvtx_mem;
    out.Blank();
    out.Line(
        "NVTX MEMORY: %d heap%s and %d region%s registered; %d region%s "
        "unregistered, %d ended by a heap reset or unregister, %d by "
        "their block's free; %d still registered (%s)",
        m.heaps_registered, m.heaps_registered == 1 ? "" : "s",
        m.regions_registered, m.regions_registered == 1 ? "" : "s",
        m.regions_unregistered, m.regions_unregistered == 1 ? "" : "s",
        m.regions_ended_by_heap, m.regions_ended_by_free, m.live_regions,
        HumanBytes(m.live_region_bytes));
  }

  // Call sites that kept growing while the program ran.
  if (!data.growth.empty()) {
    out.Blank();
    out.Line(
        "GROWTH: %d call site%s kept growing (suspected leaks; %d samples)",
        data.growth.size(), data.growth.size() == 1 ? "" : "s",
        data.growth_samples);
    for (const ReportData::Growth& g : data.growth) {
      out.Line(
          "GROWTH: %s -> %s, rose %d times in a row over %.1fs (%.1fs to "
          "%.1fs), allocated here:",
          HumanBytes(g.first_bytes), HumanBytes(g.last_bytes), g.rises,
          g.last_s - g.first_s, g.first_s, g.last_s);
      PrintStack(out, g.stack, data.stacks);
    }
  }

  out.Blank();
  out.Line("%s", SummaryLine(data));
  return out.Take();
}

std::string RenderTextAfterEarlier(const ReportData& data) {
  TextOut out(data.pid);
  out.Line(
      "gpumemtrace %s report (%s) for %s", data.version, data.reason,
      data.argv.empty() ? std::string("?") : absl::StrJoin(data.argv, " "));
  const ReportData::EarlierReport& earlier = data.earlier_printed;
  const uint64_t since = data.summary.errors > earlier.errors
                             ? data.summary.errors - earlier.errors
                             : 0;
  out.Line(
      "the %s report above (at %.3f s) is this process's report, not repeated "
      "here; since then: %s",
      earlier.reason, earlier.at_s,
      since == 0 ? std::string("no new error")
                 : absl::StrFormat("%d new error%s (each printed above when "
                                   "found; all in a report file with "
                                   "report=json)",
                                   since, since == 1 ? "" : "s"));
  out.Line("%s", SummaryLine(data));
  return out.Take();
}

}  // namespace gmt
