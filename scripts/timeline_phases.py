#!/usr/bin/env python3
"""Where the time of repeated collectives goes, from a Chorus timeline.

Reads a Chrome-trace timeline (CHORUS_TIMELINE) and prints, per row (a
tensor name), the median duration of each span name, and the median gap
from the end of one span to the start of the next on that row (including
the gap from one call's last span to the next call's first: the time in
the caller between a completion and its next enqueue, plus waking it).
    timeline_phases.py TIMELINE.json [ROW_SUBSTRING]
"""
import json
import statistics
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        text = f.read().strip()
    if not text.endswith("]"):  # a timeline cut short: close the array
        text = text.rstrip(",\n") + "]"
    return json.loads(text)


def main():
    events = load(sys.argv[1])
    want = sys.argv[2] if len(sys.argv) > 2 else ""
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    rows = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and want in names.get(e["tid"], ""):
            rows[e["tid"]].append(e)
    for tid, spans in sorted(rows.items(), key=lambda kv: names.get(kv[0], "")):
        spans.sort(key=lambda e: e["ts"])
        durations, gaps = defaultdict(list), defaultdict(list)
        for a, b in zip(spans, spans[1:]):
            gaps[f"{a['name']} -> {b['name']}"].append(b["ts"] - (a["ts"] + a["dur"]))
        for e in spans:
            durations[e["name"]].append(e["dur"])
        print(f"# row {names.get(tid, tid)}: {len(spans)} spans (medians, microseconds)")
        for name, v in durations.items():
            print(f"  span {name:40s} {statistics.median(v):9.1f}  (n={len(v)})")
        for name, v in gaps.items():
            print(f"  gap  {name:40s} {statistics.median(v):9.1f}  (n={len(v)})")


if __name__ == "__main__":
    main()
