#!/usr/bin/env python3
"""Candidates per second of `kernelarc optimize` on the CPU with 1, 2, ... local CPU workers.

Usage: scripts/pool-throughput.py <kernelarc> [problem_dir] [--budget N] [--workers 1,2]
                                  [--seed S] [--repeats R]
                                  [--synth-latency SECONDS --synthesis-parallel 1,4]

With --synth-latency, every candidate is a program from a stand-in for a language model: a
command synthesizer that waits that long, then answers with its parent's program (or the
baseline's) marked with the request's seed; rows then compare --synthesis-parallel values, the
requests the search keeps out at once.

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


# The stand-in model: the request on stdin, the sources on stdout (docs/SEARCH.md, "Code
# synthesizers"), after the latency given as its argument.
STAND_IN_MODEL = """
import json, sys, time
request = json.load(sys.stdin)
time.sleep(float(sys.argv[1]))
start = request.get("parent") or (request.get("inspirations") or [None])[-1]
if not start:
    print(json.dumps({"error": "nothing to start from"}))
    sys.exit(0)
print(json.dumps({"sources": [
    {"path": source["path"], "content": source["content"] + f"\\n// seed {request['seed']}\\n"}
    for source in start["solution"]["sources"]]}))
"""


def one_run(kernelarc: str, problem: Path, budget: int, workers: int, seed: int,
            latency: float | None, parallel: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="kernelarc-throughput-") as scratch:
        out = Path(scratch) / "best"
        command = [kernelarc, "optimize", str(problem), "--budget", str(budget), "--seed",
                   str(seed), "--cpu-workers", str(workers), "--workspace",
                   str(Path(scratch) / "ws"), "--out", str(out), *QUICK_GUARD]
        if latency is not None:
            model = Path(scratch) / "stand_in_model.py"
            model.write_text(STAND_IN_MODEL)
            command += ["--synth", "command", "--synth-command",
                        f"{sys.executable} {model} {latency}",
                        "--synthesis-parallel", str(parallel)]
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
    parser.add_argument("--synth-latency", type=float)
    parser.add_argument("--synthesis-parallel", default="1")
    args = parser.parse_args()
    try:
        counts = [int(count) for count in args.workers.split(",")]
        parallels = [int(count) for count in args.synthesis_parallel.split(",")]
    except ValueError:
        sys.exit(f"--workers {args.workers} / --synthesis-parallel {args.synthesis_parallel}: "
                 "expected lists of counts such as 1,2")
    model = "" if args.synth_latency is None else f", stand-in model answering in {args.synth_latency} s"
    print(f"{Path(args.problem).name}, budget {args.budget}, seed {args.seed}, "
          f"{args.repeats} repeat(s){model}")
    print(f"{'cpu_workers':>11} {'requests':>8} {'measured':>8} {'search_s':>9} "
          f"{'candidates/s':>12}")
    for workers in counts:
        for parallel in parallels:
            runs = [one_run(args.kernelarc, Path(args.problem), args.budget, workers, args.seed,
                            args.synth_latency, parallel)
                    for _ in range(args.repeats)]
            rates = [run["measured"] / run["search_seconds"] for run in runs]
            median = statistics.median(rates)
            seconds = statistics.median(run["search_seconds"] for run in runs)
            print(f"{workers:>11} {parallel:>8} {runs[0]['measured']:>8} {seconds:>9.1f} "
                  f"{median:>12.2f}")


if __name__ == "__main__":
    main()
