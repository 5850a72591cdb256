#!/usr/bin/env python3
"""Candidates per second of `kernelarc optimize` on the CPU alone, then with a Redis worker beside it.

Usage: scripts/redis-throughput.py <kernelarc> [problem_dir] [--budget N] [--seed S]
                                   [--repeats R]

Runs `optimize` on a bundled CPU problem (problems/cpu/rmsnorm_f32 by default) in a fresh
workspace: once measuring on this host's CPU alone, once with `--redis` and one
`kernelarc worker --redis --device cpu` process (its own fresh workspace) on a redis-server that
the script starts on a free port and stops. Prints one row each: the candidates the search
measured, its wall time (first proposal to last result, from the run's summary.json) and
candidates per second, the median over the repeats. Every process runs on this host, so the
worker competes with the orchestrator for its cores: a throughput figure, not a test.
"""
import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICK_GUARD = ["--workloads", "largest", "--trials", "1", "--warmup", "1", "--iterations", "5",
               "--final-top", "2", "--final-rounds", "2", "--plain", "--no-skills"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis(scratch: Path) -> tuple[subprocess.Popen, str]:
    server = shutil.which("redis-server")
    if not server:
        sys.exit("redis-server is not installed (scripts/install-deps.sh installs it)")
    port = free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--dir",
                                str(scratch), "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL)
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"redis://127.0.0.1:{port}"
        time.sleep(0.05)
    process.kill()
    sys.exit(f"redis-server did not listen on port {port}")


def one_run(kernelarc: str, problem: Path, budget: int, seed: int, with_worker: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="kernelarc-redis-throughput-") as scratch_name:
        scratch = Path(scratch_name)
        out = scratch / "best"
        command = [kernelarc, "optimize", str(problem), "--budget", str(budget), "--seed",
                   str(seed), "--workspace", str(scratch / "ws"), "--out", str(out), *QUICK_GUARD]
        helpers = []
        try:
            if with_worker:
                server, url = start_redis(scratch)
                helpers.append(server)
                helpers.append(subprocess.Popen(
                    [kernelarc, "worker", "--redis", url, "--device", "cpu", "--workspace",
                     str(scratch / "worker")], stderr=subprocess.DEVNULL))
                command += ["--redis", url, "--redis-jobs", "1"]
            done = subprocess.run(command, capture_output=True, text=True)
        finally:
            for helper in reversed(helpers):
                helper.kill()
                helper.wait()
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return json.loads((out / "summary.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelarc")
    parser.add_argument("problem", nargs="?", default=str(REPO / "problems/cpu/rmsnorm_f32"))
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"{Path(args.problem).name}, budget {args.budget}, seed {args.seed}, "
          f"{args.repeats} repeat(s)")
    print(f"{'evaluators':<26} {'measured':>8} {'search_s':>9} {'candidates/s':>12}")
    for name, with_worker in (("local cpu", False), ("local cpu + 1 redis worker", True)):
        runs = [one_run(args.kernelarc, Path(args.problem), args.budget, args.seed, with_worker)
                for _ in range(args.repeats)]
        rate = statistics.median(run["measured"] / run["search_seconds"] for run in runs)
        seconds = statistics.median(run["search_seconds"] for run in runs)
        print(f"{name:<26} {runs[0]['measured']:>8} {seconds:>9.1f} {rate:>12.2f}")


if __name__ == "__main__":
    main()
