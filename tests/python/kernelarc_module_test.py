"""The `kernelarc` Python module on the CPU: import, optimize, runs, eval through the guard, errors,
load, and a bundled solution as a torch op (eager; torch.compile and opcheck on torch 2.4+).

Run by CTest with the Python the module was built for and PYTHONPATH=build/python; argv[1] is
the repository root. Exits 77 (reported as skipped) where that Python lacks torch."""

import json
import os
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    print("SKIPPED: this Python has no torch")
    sys.exit(77)

import kernelarc
import kernelarc.torch

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.getcwd()
PROBLEM = os.path.join(ROOT, "problems/cpu/rmsnorm_f32")
OPTIMIZED = os.path.join(PROBLEM, "solutions/optimized")
TOLERANCE = 1e-4  # the problem's workloads' max_atol and max_rtol


def reference_rmsnorm(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight


def has_torch_2_4():
    return hasattr(torch.library, "custom_op") and hasattr(torch.library, "opcheck")


class KernelarcModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workspace = tempfile.mkdtemp(prefix="kernelarc_module_test_")

    def test_runs_of_an_empty_workspace_is_empty(self):
        self.assertEqual(kernelarc.runs(tempfile.mkdtemp()), [])

    def test_eval_of_the_optimized_solution_passes(self):
        traces = kernelarc.eval(PROBLEM, OPTIMIZED, workspace=self.workspace,
                                workloads=["largest", "9f5092c6"], trials=3, no_baseline=True)
        self.assertEqual(len(traces), 2)
        for trace in traces:
            self.assertEqual(trace["evaluation"]["status"], "PASSED", trace["evaluation"]["log"])
            self.assertEqual(trace["definition"], "rmsnorm_f32")
            self.assertEqual(trace["solution"], "rmsnorm_f32_optimized")
            self.assertLessEqual(trace["evaluation"]["correctness"]["max_absolute_error"],
                                 TOLERANCE)

    def test_optimize_spends_its_budget_and_its_run_is_listed_and_loaded(self):
        workspace = tempfile.mkdtemp(prefix="kernelarc_module_optimize_")
        summary = kernelarc.optimize(PROBLEM, budget=3, workspace=workspace, workloads="9f5092c6",
                                     seed=1, trials=1, no_skills=True)
        self.assertEqual(summary["evaluated"], 3)
        self.assertEqual([run["id"] for run in kernelarc.runs(workspace)], [summary["run_id"]])
        loaded = kernelarc.load("latest", workspace=workspace)
        self.assertEqual(loaded["run_id"], summary["run_id"])
        self.assertEqual(loaded["definition"]["name"], "rmsnorm_f32")
        # The winner the run wrote out is the one load() hands back.
        with open(os.path.join(summary["solution_dir"], "solution.json")) as file:
            self.assertEqual(loaded["solution"]["name"], json.load(file)["name"])

    def test_bad_input_is_a_value_error_with_the_message(self):
        with self.assertRaisesRegex(ValueError, "--workloads: nope: no workload uuid starts"):
            kernelarc.eval(PROBLEM, OPTIMIZED, workspace=self.workspace, workloads="nope")

    def test_a_solution_path_needs_its_problem(self):
        with self.assertRaisesRegex(ValueError, "needs problem="):
            kernelarc.load(OPTIMIZED, workspace=self.workspace)

    def test_load_of_a_solution_path(self):
        loaded = kernelarc.load(OPTIMIZED, workspace=self.workspace, problem=PROBLEM)
        self.assertEqual(loaded["solution"]["name"], "rmsnorm_f32_optimized")
        self.assertEqual(loaded["definition"]["name"], "rmsnorm_f32")
        self.assertEqual(loaded["problem_dir"], PROBLEM)
        self.assertEqual(loaded["solution_path"], os.path.join(OPTIMIZED, "solution.json"))
        self.assertIsNone(loaded["run_id"])

    def test_compile_op_matches_the_reference(self):
        # One extension build for every check below (about 25 s on two cores).
        loaded = kernelarc.load(OPTIMIZED, workspace=self.workspace, problem=PROBLEM)
        op = kernelarc.torch.compile_op(loaded, workspace=self.workspace)
        torch.manual_seed(0)
        for rows, hidden in ((7, 1000), (33, 3), (1, 4096)):
            x = torch.randn(rows, hidden)
            weight = torch.randn(hidden)
            # Strided input: the op hands the kernel a contiguous copy.
            out = op(x.t().contiguous().t(), weight)
            self.assertEqual(out.shape, (rows, hidden))
            torch.testing.assert_close(out, reference_rmsnorm(x, weight), atol=TOLERANCE,
                                       rtol=TOLERANCE)
        self.assertIs(kernelarc.torch.compile_op(loaded, workspace=self.workspace), op)
        if not has_torch_2_4():
            print(f"torch {torch.__version__}: torch.compile and opcheck not checked (2.4+)")
            return
        x, weight = torch.randn(5, 64), torch.randn(64)
        torch.library.opcheck(op, (x, weight))

        def block(x, weight):
            return op(x * 2.0, weight) + 1.0

        compiled = torch.compile(block, fullgraph=True)
        torch.testing.assert_close(compiled(x, weight), reference_rmsnorm(x * 2.0, weight) + 1.0,
                                   atol=TOLERANCE, rtol=TOLERANCE)


if __name__ == "__main__":
    unittest.main(verbosity=2)
