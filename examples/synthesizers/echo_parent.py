#!/usr/bin/env python3
"""A minimal command synthesizer for kernelarc: answers with the parent candidate's sources.

kernelarc runs this program once per candidate it wants, writes the request as one JSON object to
its stdin and reads one JSON object from its stdout (the protocol is in README.md beside this
file). A real synthesizer would change the sources; this one returns them unchanged, which makes
it a template to start from and a check that the plumbing works.

Without a parent (a draft) there is nothing to echo, so it answers with an error, which kernelarc
records as the reason this candidate has no solution. Anything written to stderr is kept for
failure messages; stdout must hold the answer alone.
"""

import json
import sys

PROTOCOL = 1


def answer(request):
    if request.get("protocol") != PROTOCOL:
        return {"error": f"echo_parent.py speaks protocol {PROTOCOL}, "
                         f"got {request.get('protocol')!r}"}
    parent = request.get("parent")
    if parent is None:
        return {"error": f"echo_parent.py needs a parent candidate to echo; "
                         f"the {request.get('move')} request has none"}
    solution = parent["solution"]
    return {
        "sources": [{"path": s["path"], "content": s["content"]} for s in solution["sources"]],
        "description": f"the sources of candidate {parent['candidate_id']}, unchanged",
    }


def main():
    request = json.load(sys.stdin)
    print(f"echo_parent.py: {request.get('move')} request from agent {request.get('agent')!r}",
          file=sys.stderr)
    json.dump(answer(request), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
