#!/usr/bin/env python3
"""Guard wall time per evaluated candidate, per run, read from a workspace's store.

Usage: scripts/guard-cost.py <workspace> [run_id...]

Sums each candidate's guard_seconds (setup, correctness, timing, baselines; parts are inside
those) over its workloads' traces and prints, per run, the number of evaluations and the
median, mean and total of that sum: the measure of what the guard costs a candidate, which the
guard's changes are held to (issue 24: at most +30% on the bundled CUDA problems).
"""
import json
import sqlite3
import statistics
import sys
from pathlib import Path

TOP_PHASES = ("setup", "correctness", "timing", "baselines")


PARTS = ("inputs", "worker", "host_link", "checks")


def candidate_seconds(objects: Path, traces_key: str) -> tuple[float, dict]:
    """The candidate's guard seconds, and how its parts (guard_seconds/parts) add up."""
    path = objects / traces_key[:2] / traces_key[2:]
    traces = json.loads(path.read_text()).get("traces", [])
    total = 0.0
    parts = {p: 0.0 for p in PARTS}
    for trace in traces:
        phases = trace.get("kernelarc", {}).get("extra", {}).get("guard_seconds", {})
        total += sum(float(phases.get(p, 0.0)) for p in TOP_PHASES)
        for p in PARTS:
            parts[p] += float(phases.get("parts", {}).get(p, 0.0))
    return total, parts


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    workspace = Path(sys.argv[1])
    db = sqlite3.connect(workspace / "kernelarc.db")
    runs = [int(r) for r in sys.argv[2:]] or [r for (r,) in db.execute("SELECT id FROM runs")]
    print("| run | problem | evaluations | median s | mean s | total s | median parts s: "
          + ", ".join(PARTS) + " |")
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        (problem,) = db.execute("SELECT problem_name FROM runs WHERE id=?", (run,)).fetchone()
        keys = db.execute(
            "SELECT e.traces_key FROM evaluations e JOIN candidates c ON c.id=e.candidate_id "
            "WHERE c.run_id=?", (run,)).fetchall()
        measured = [candidate_seconds(workspace / "objects", k) for (k,) in keys]
        seconds = [total for total, _ in measured]
        if not seconds:
            print(f"| {run} | {problem} | 0 | - | - | - | - |")
            continue
        parts = ", ".join(f"{statistics.median(p[name] for _, p in measured):.2f}"
                          for name in PARTS)
        print(f"| {run} | {problem} | {len(seconds)} | {statistics.median(seconds):.2f} | "
              f"{statistics.mean(seconds):.2f} | {sum(seconds):.1f} | {parts} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
