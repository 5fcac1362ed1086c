#!/usr/bin/env python3
"""tools/trace_overlap.py TRACE.json [LANE_A LANE_B] — how much of the time two device lanes of a
Chrome trace written by strata-engine (--trace) are busy at the same moment: the pipeline
overlap. Prints each lane's busy time and the time both were busy."""
import json
import sys


def busy_intervals(events, tid):
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("ph") == "X" and e.get("tid") == tid and e.get("cat") not in ("idle",))
    merged = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def intersect(a, b):
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def main():
    trace = json.load(open(sys.argv[1]))
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    wanted = sys.argv[2:4] or [n for n in names.values() if n.startswith("gpu")][:2]
    tids = [next(t for t, n in names.items() if n.split(" ")[0] == w.split(" ")[0]) for w in wanted]
    a, b = (busy_intervals(events, t) for t in tids)
    start = min(x[0] for x in a + b)
    end = max(x[1] for x in a + b)
    busy_a = sum(e - s for s, e in a)
    busy_b = sum(e - s for s, e in b)
    both = intersect(a, b)
    print(f"window {(end - start) / 1000:.1f} ms; {names[tids[0]]} busy {busy_a / 1000:.1f} ms, "
          f"{names[tids[1]]} busy {busy_b / 1000:.1f} ms; both busy at once {both / 1000:.1f} ms "
          f"({100 * both / (end - start):.0f}% of the window)")


if __name__ == "__main__":
    main()
