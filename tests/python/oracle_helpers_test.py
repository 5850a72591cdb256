"""Helpers of the PyTorch oracle (python/kernelarc_oracle.py) that need no torch: what a timed
baseline's note says it ran, how many calls it times, its warm-up limit. argv[1] is the
repository root."""

import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "python"))

import kernelarc_oracle  # noqa: E402
import kernelarc_oracle_tensors  # noqa: E402


class KernelSummary(unittest.TestCase):
    def test_counts_per_call_most_frequent_first_without_templates(self):
        names = (["void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>"
                  "(Flash_fwd_params)"] * 3 + ["Memcpy DtoD (Device -> Device)"] * 6)
        self.assertEqual(kernelarc_oracle.kernel_summary(names, 3),
                         "Memcpy DtoD x2, pytorch_flash::flash_fwd_kernel x1")

    def test_says_how_many_more_past_the_most_it_lists(self):
        self.assertEqual(kernelarc_oracle.kernel_summary(list("abcdea"), 1, most=2),
                         "a x2, b x1, 3 more")

    def test_cuts_long_names_and_says_none_for_no_work(self):
        summary = kernelarc_oracle.kernel_summary(["k" * 100], 1, width=10)
        self.assertEqual(summary, "kkkkkkk... x1")
        self.assertEqual(kernelarc_oracle.kernel_summary([], 5), "none")


class TimedCalls(unittest.TestCase):
    JOB = {"iterations": 20, "min_iterations": 10, "timing_budget_s": 2.0}

    def test_fast_calls_are_timed_as_often_as_the_job_says(self):
        self.assertEqual(kernelarc_oracle.timed_calls(self.JOB, 0.001), 20)

    def test_slow_calls_are_cut_to_the_budget_but_not_below_the_least(self):
        self.assertEqual(kernelarc_oracle.timed_calls(self.JOB, 0.15), 13)
        self.assertEqual(kernelarc_oracle.timed_calls(self.JOB, 5.0), 10)

    def test_no_budget_or_no_estimate_keeps_the_job_iterations(self):
        self.assertEqual(kernelarc_oracle.timed_calls({"iterations": 7}, 5.0), 7)
        self.assertEqual(kernelarc_oracle.timed_calls(self.JOB, 0.0), 20)
        # A least above the most: the most wins, as in the guard.
        job = {"iterations": 3, "min_iterations": 10, "timing_budget_s": 1.0}
        self.assertEqual(kernelarc_oracle.timed_calls(job, 5.0), 3)


class TimeLimit(unittest.TestCase):
    def test_a_body_that_outlasts_the_limit_is_interrupted(self):
        begin = time.monotonic()
        with self.assertRaises(kernelarc_oracle.WarmupTimeout):
            with kernelarc_oracle.time_limit(0.2):
                time.sleep(5)
        self.assertLess(time.monotonic() - begin, 2)

    def test_a_body_within_the_limit_leaves_no_alarm_behind(self):
        with kernelarc_oracle.time_limit(0.2):
            pass
        time.sleep(0.4)  # an alarm left armed would raise here

    def test_zero_is_no_limit(self):
        with kernelarc_oracle.time_limit(0):
            time.sleep(0.05)


class WriteAtomically(unittest.TestCase):
    def test_a_dead_writers_temporary_goes_when_the_file_is_written_again(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "entry.safetensors")
            here = f"{path}.tmp-{socket.gethostname()}-"
            finished = subprocess.Popen([sys.executable, "-c", "pass"])
            finished.wait()
            dead = f"{here}{finished.pid}"
            alive = f"{here}{os.getppid()}"
            elsewhere = f"{path}.tmp-another-host-{finished.pid}"
            other_entry = os.path.join(directory, f"other.safetensors.tmp-{socket.gethostname()}-"
                                                  f"{finished.pid}")
            for name in (dead, alive, elsewhere, other_entry):
                with open(name, "wb") as file:
                    file.write(b"partial")
            kernelarc_oracle_tensors.write_atomically(path, [b"whole"])
            with open(path, "rb") as file:
                self.assertEqual(file.read(), b"whole")
            self.assertFalse(os.path.exists(dead))
            self.assertTrue(os.path.exists(alive))
            self.assertTrue(os.path.exists(elsewhere))
            self.assertTrue(os.path.exists(other_entry))
            self.assertFalse(any(name.endswith(f"-{os.getpid()}") for name in os.listdir(directory)))


if __name__ == "__main__":
    unittest.main()
