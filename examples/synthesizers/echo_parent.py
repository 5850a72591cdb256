#!/usr/bin/env python3
"""A minimal command synthesizer for kernelarc: answers with the parent candidate's sources.

kernelarc runs this program once per candidate it wants, writes the request as one JSON object to
its stdin and reads one JSON object from its stdout (the protocol is in README.md beside this
file). A real synthesizer would change the sources; this one returns them unchanged, which makes
it a template to start from and a check that the plumbing works.

A draft has no parent; it answers a draft with the sources of the first candidate it is shown
(kernelarc shows the run's baseline, solutions/naive or solutions/basic, to a draft), so that a
run with `--synth command` alone gets going. With neither a parent nor a candidate to copy (a
run with `--baseline none`) it answers with an error, which kernelarc records as the reason the
candidate has no solution. Anything written to stderr is kept for failure messages; stdout must
hold the answer alone.
"""

import json
import sys

PROTOCOL = 1


def answer(request):
    if request.get("protocol") != PROTOCOL:
        return {"error": f"echo_parent.py speaks protocol {PROTOCOL}, "
                         f"got {request.get('protocol')!r}"}
    parent = request.get("parent")
    if parent is not None:
        return copy_of(parent, "the sources of the parent, unchanged")
    # A draft: the entry file must be the draft default (main.cpp on the CPU, kernel.cu on
    # CUDA), so copy a shown candidate whose entry file is that one.
    entry = "kernel.cu" if str(request.get("device", "")).startswith("cuda") else "main.cpp"
    for candidate in request.get("inspirations") or []:
        if candidate["solution"].get("spec", {}).get("entry_point", "").split("::")[0] == entry:
            return copy_of(candidate, "a draft: the sources of the candidate shown, unchanged")
    return {"error": f"echo_parent.py has nothing to echo: the {request.get('move')} request "
                     f"has no parent and shows no candidate with entry file {entry} "
                     f"(run with a baseline)"}


def copy_of(candidate, description):
    solution = candidate["solution"]
    answer = {
        "sources": [{"path": s["path"], "content": s["content"]} for s in solution["sources"]],
        "description": description,
    }
    build = solution.get("spec", {}).get("compile_options", {})
    for key in ("cflags", "cuda_cflags", "ld_flags"):
        if key in build:
            answer[key] = build[key]
    return answer


def main():
    request = json.load(sys.stdin)
    print(f"echo_parent.py: {request.get('move')} request from agent {request.get('agent')!r}",
          file=sys.stderr)
    json.dump(answer(request), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
