"""Traces the op graphs of tests/lower/lower_plan_test.cpp: for each case directory (or the ones
named) it runs python/kernelarc_trace.py on definition.json and writes graph.json.

Usage (from the repository root, with a Python that has torch):
  /usr/bin/python3 tests/data/lower/generate.py [case ...]
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lower_match"))
from generate import TRACER, job_for  # noqa: E402  (the same job as the family-match cases)


def main():
    names = sys.argv[1:] or sorted(
        name for name in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, name, "definition.json")))
    for name in names:
        directory = os.path.join(HERE, name)
        with open(os.path.join(directory, "definition.json")) as file:
            definition = json.load(file)
        with tempfile.TemporaryDirectory() as scratch:
            job_path = os.path.join(scratch, "job.json")
            out_path = os.path.join(scratch, "out.json")
            with open(job_path, "w") as file:
                json.dump(job_for(definition), file)
            subprocess.run([sys.executable, TRACER, job_path, out_path], check=True)
            with open(out_path) as file:
                result = json.load(file)
        if not result["ok"]:
            sys.exit(f"{name}: the tracer failed: {result['error']}")
        with open(os.path.join(directory, "graph.json"), "w") as file:
            json.dump(result["graph"], file, indent=1)
            file.write("\n")
        print(f"{name}: {len(result['graph']['nodes'])} nodes")


if __name__ == "__main__":
    main()
