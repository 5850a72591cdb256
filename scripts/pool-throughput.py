#!/usr/bin/env python3
"""Candidates per second of `kernelarc optimize` on the CPU with 1, 2, ... local CPU workers.

Usage: scripts/pool-throughput.py <kernelarc> [problem_dir] [--budget N] [--workers 1,2]
                                  [--seed S] [--repeats R]

Runs `optimize` on a bundled CPU problem (problems/cpu/rmsnorm_f32 by default) once per worker
count and repeat, each in a fresh workspace (no build cache or skills carried over; the
calibration comes from the machine's copy), and prints one row per worker count: the candidates
the search measured, its wall time (first proposal to last result, from the run's summary.json:
the baseline and the finalists' re-measurement apart) and candidates per second, the median over
the repeats. Throughput figures, not a test: on a loaded machine they move with the load.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The search's guard settings of the CLI tests: enough to rank candidates, quick to measure.
QUICK_GUARD = ["--workloads", "largest", "--trials", "1", "--warmup", "1", "--iterations", "5",
               "--final-top", "2", "--final-rounds", "2", "--plain", "--no-skills"]


def one_run(kernelarc: str, problem: Path, budget: int, workers: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="kernelarc-throughput-") as scratch:
        out = Path(scratch) / "best"
        command = [kernelarc, "optimize", str(problem), "--budget", str(budget), "--seed",
                   str(seed), "--cpu-workers", str(workers), "--workspace",
                   str(Path(scratch) / "ws"), "--out", str(out), *QUICK_GUARD]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        summary = json.loads((out / "summary.json").read_text())
    for field in ("measured", "search_seconds"):
        if field not in summary:
            sys.exit(f"{kernelarc}: summary.json has no \"{field}\" (a kernelarc before pools?)")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelarc")
    parser.add_argument("problem", nargs="?", default=str(REPO / "problems/cpu/rmsnorm_f32"))
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    try:
        counts = [int(count) for count in args.workers.split(",")]
    except ValueError:
        sys.exit(f"--workers {args.workers}: expected a list of worker counts such as 1,2")
    print(f"{Path(args.problem).name}, budget {args.budget}, seed {args.seed}, "
          f"{args.repeats} repeat(s)")
    print(f"{'cpu_workers':>11} {'measured':>8} {'search_s':>9} {'candidates/s':>12}")
    for workers in counts:
        runs = [one_run(args.kernelarc, Path(args.problem), args.budget, workers, args.seed)
                for _ in range(args.repeats)]
        rates = [run["measured"] / run["search_seconds"] for run in runs]
        median = statistics.median(rates)
        seconds = statistics.median(run["search_seconds"] for run in runs)
        print(f"{workers:>11} {runs[0]['measured']:>8} {seconds:>9.1f} {median:>12.2f}")


if __name__ == "__main__":
    main()
