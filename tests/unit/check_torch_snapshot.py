#!/usr/bin/env python3
"""Reads a PyTorch memory snapshot we wrote with Python's own pickle module and
checks what torch.cuda._memory_viz (trace_plot, segment_plot, stats, trace)
and pytorch.org/memory_viz read from it: the keys, their types, and that the
sizes add up the way the viewers assume (a segment's blocks fill it; replaying
device_traces leaves the blocks the segments list as live).

  check_torch_snapshot.py FILE [--live N] [--events N] [--max-events N]

--live: active blocks expected over all segments; --events: device_traces
entries expected in all; --max-events: an upper bound instead.
Exits 0 when every check passes, 1 with the reasons otherwise.
"""
import argparse
import pickle
import sys

SEGMENT_KEYS = {"device": int, "address": int, "total_size": int,
                "allocated_size": int, "active_size": int,
                "requested_size": int, "stream": int, "segment_type": str,
                "segment_pool_id": tuple, "is_expandable": bool,
                "frames": list, "blocks": list}
BLOCK_KEYS = {"address": int, "size": int, "requested_size": int,
              "state": str, "frames": list}
TRACE_KEYS = {"action": str, "addr": int, "size": int, "stream": int,
              "time_us": int, "frames": list}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc",
           "segment_free"}


def check(data, args):
    problems = []

    def need(cond, what):
        if not cond:
            problems.append(what)

    need(isinstance(data, dict), "top level is not a dict")
    if problems:
        return problems
    need(isinstance(data.get("segments"), list), "no segments list")
    need(isinstance(data.get("device_traces"), list), "no device_traces list")
    if problems:
        return problems

    def frames_ok(frames, where):
        for f in frames:
            need(isinstance(f, dict) and isinstance(f.get("filename"), str)
                 and isinstance(f.get("line"), int)
                 and isinstance(f.get("name"), str),
                 f"{where}: bad frame {f!r}")

    live = {}
    for i, seg in enumerate(data["segments"]):
        for key, kind in SEGMENT_KEYS.items():
            need(isinstance(seg.get(key), kind),
                 f"segment {i}: {key} is {type(seg.get(key)).__name__}")
        if problems:
            return problems
        need(len(seg["segment_pool_id"]) == 2, f"segment {i}: pool id")
        frames_ok(seg["frames"], f"segment {i}")
        sizes = 0
        active = 0
        for b in seg["blocks"]:
            for key, kind in BLOCK_KEYS.items():
                need(isinstance(b.get(key), kind), f"segment {i} block: {key}")
            if problems:
                return problems
            need(b["state"] in ("active_allocated", "active_pending_free",
                                "inactive"), f"block state {b['state']}")
            need(b["requested_size"] <= b["size"], "requested > size")
            frames_ok(b["frames"], f"segment {i} block")
            need(b["address"] == seg["address"] + sizes,
                 f"segment {i}: block not where the previous one ends")
            sizes += b["size"]
            if b["state"] == "active_allocated":
                active += b["size"]
                live[(seg["device"], b["address"])] = b["size"]
        # stats (segsum) asserts that allocated + free parts make the total.
        need(sizes == seg["total_size"], f"segment {i}: blocks do not fill it")
        need(active == seg["active_size"], f"segment {i}: active_size")
        need(seg["allocated_size"] <= seg["total_size"],
             f"segment {i}: allocated_size")
        need(seg["segment_type"] in ("small", "large"), "segment_type")

    events = 0
    for device, trace in enumerate(data["device_traces"]):
        need(isinstance(trace, list), f"device_traces[{device}] not a list")
        allocated = {}
        segments = set()
        last_time = None
        for e in trace:
            events += 1
            for key, kind in TRACE_KEYS.items():
                need(isinstance(e.get(key), kind), f"trace entry {key}: {e!r}")
            if problems:
                return problems
            need(e["action"] in ACTIONS, f"unknown action {e['action']}")
            frames_ok(e["frames"], "trace entry")
            need(last_time is None or e["time_us"] >= last_time,
                 "time_us goes back")
            last_time = e["time_us"]
            a = e["action"]
            if a == "segment_alloc":
                segments.add(e["addr"])
            elif a == "alloc":
                need(e["addr"] in segments, "alloc outside a segment")
                allocated[e["addr"]] = e["size"]
            elif a == "free_completed":
                allocated.pop(e["addr"], None)
            elif a == "segment_free":
                segments.discard(e["addr"])
        # Without dropped events the replay ends where the segments are.
        for addr, size in allocated.items():
            need(live.get((device, addr)) == size,
                 f"device {device}: 0x{addr:x} live in the trace, "
                 "not in segments")

    if args.live is not None:
        need(len(live) == args.live, f"{len(live)} live blocks, "
             f"expected {args.live}")
    if args.events is not None:
        need(events == args.events, f"{events} trace entries, "
             f"expected {args.events}")
    if args.max_events is not None:
        need(events <= args.max_events, f"{events} trace entries > "
             f"{args.max_events}")
    return problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--live", type=int)
    p.add_argument("--events", type=int)
    p.add_argument("--max-events", type=int)
    args = p.parse_args()
    with open(args.file, "rb") as f:
        data = pickle.load(f)
    problems = check(data, args)
    for problem in problems[:20]:
        print("check_torch_snapshot:", problem)
    if problems:
        return 1
    print(f"check_torch_snapshot: ok: {len(data['segments'])} segments, "
          f"{sum(len(t) for t in data['device_traces'])} trace entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
