"""Turns the two raw traces of the kernelarc tracer into one op graph: every size, stride,
offset and integer argument becomes an integer times a product of var axes, found from its
values in the two traces (which set the var axes to different primes, so the product is unique).
"""

import itertools

from kernelarc_trace_recorder import TraceFailure

MAX_POWER = 4  # of one axis in a size; beyond it a value is not taken for a monomial


def multiplicity(value, factor):
    """How often `factor` divides `value`, at most MAX_POWER (always MAX_POWER for 1)."""
    count = 0
    while count < MAX_POWER and (factor == 1 or value % factor == 0):
        value //= factor
        count += 1
    return count


class Monomials:
    """Solves value pairs as coefficient * product(var axis ** power)."""

    def __init__(self, var_names, first, second):
        self.names = var_names
        self.first = [first[name] for name in var_names]
        self.second = [second[name] for name in var_names]

    def solve(self, a, b):
        """The expression, or None when no monomial gives a in the first trace and b in the
        second. With prime axis values there is one solution; otherwise the one with the
        fewest axis factors is taken."""
        if a == 0 or b == 0:
            return "0" if a == b else None
        ranges = [range(min(multiplicity(abs(a), p), multiplicity(abs(b), q)) + 1)
                  for p, q in zip(self.first, self.second)]
        best = None
        for powers in itertools.product(*ranges):
            divisor_a = divisor_b = 1
            for p, q, power in zip(self.first, self.second, powers):
                divisor_a *= p ** power
                divisor_b *= q ** power
            if a % divisor_a or b % divisor_b or a // divisor_a != b // divisor_b:
                continue
            if best is None or sum(powers) < sum(best[1]):
                best = (a // divisor_a, powers)
        return None if best is None else self.format(*best)

    def format(self, coefficient, powers):
        factors = [name for name, power in zip(self.names, powers) for _ in range(power)]
        if not factors:
            return str(coefficient)
        if coefficient == 1:
            return "*".join(factors)
        if coefficient == -1:
            return "-" + "*".join(factors)
        if coefficient < 0:
            return f"{coefficient}*" + "*".join(factors)
        return "*".join(factors) + f"*{coefficient}"


SYMBOLIC_KEYS = frozenset(("shape", "stride", "offset", "int"))


def merge_tree(first, second, monomials, where, symbolic=False):
    """One JSON tree from two of the same structure: integers under SYMBOLIC_KEYS solved as
    monomials, everything else equal in both."""
    def differ(detail):
        raise TraceFailure(f"the two traces differ at {where}: {detail}")

    if isinstance(first, bool) or isinstance(second, bool):
        if first is not second:
            differ(f"{first!r} and {second!r}")
        return first
    if isinstance(first, int) and isinstance(second, int):
        if not symbolic or monomials is None:
            if first != second:
                differ(f"{first} and {second}")
            return first
        solved = monomials.solve(first, second)
        if solved is None:
            raise TraceFailure(
                f"{where} is {first} in the first trace and {second} in the second: not an "
                "integer times a product of var axes")
        return solved
    if type(first) is not type(second):
        differ(f"{first!r} and {second!r}")
    if isinstance(first, dict):
        if list(first) != list(second):
            differ(f"fields {list(first)} and {list(second)}")
        return {key: merge_tree(first[key], second[key], monomials, f"{where}.{key}",
                                symbolic or key in SYMBOLIC_KEYS) for key in first}
    if isinstance(first, list):
        if len(first) != len(second):
            differ(f"{len(first)} and {len(second)} entries")
        return [merge_tree(a, b, monomials, f"{where}[{index}]", symbolic)
                for index, (a, b) in enumerate(zip(first, second))]
    if first != second:
        if isinstance(first, float):
            differ(f"the float {first!r} and {second!r} (a float computed from a var axis or "
                   "from a float scalar input?)")
        differ(f"{first!r} and {second!r}")
    return first


def merge_traces(first, second, monomials):
    """The graph's inputs, values, buffers, nodes and outputs from two raw traces."""
    ops = [node["op"] for node in first["nodes"]], [node["op"] for node in second["nodes"]]
    if ops[0] != ops[1]:
        index = next((i for i, (a, b) in enumerate(zip(*ops)) if a != b),
                     min(len(ops[0]), len(ops[1])))
        name = lambda trace: trace[index] if index < len(trace) else "the end of the trace"
        raise TraceFailure(
            "the reference runs different ops for the two axis assignments (control flow that "
            f"depends on sizes or data): op {index} is {name(ops[0])} in the first trace and "
            f"{name(ops[1])} in the second")
    graph = {key: merge_tree(first[key], second[key], monomials, key)
             for key in ("inputs", "outputs")}
    if len(first["values"]) != len(second["values"]):
        raise TraceFailure(f"the two traces saw {len(first['values'])} and "
                           f"{len(second['values'])} tensors")
    producer = {value: node for node in first["nodes"] for value in node["outputs"]}
    graph["values"] = [
        merge_tree(a, b, monomials, f"value {a['id']}" + (
            f" (made by op {producer[a['id']]['id']}, {producer[a['id']]['op']})"
            if a["id"] in producer else ""))
        for a, b in zip(first["values"], second["values"])]
    # A constant's shape is its own, not a size of the problem.
    graph["buffers"] = merge_tree(first["buffers"], second["buffers"], None, "buffers")
    graph["nodes"] = [merge_tree(a, b, monomials, f"op {a['id']} ({a['op']})")
                      for a, b in zip(first["nodes"], second["nodes"])]
    return graph
