"""Helpers of the PyTorch oracle (python/kernelarc_oracle.py) that need no torch: what a timed
baseline's note says it ran. argv[1] is the repository root."""

import os
import sys
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "python"))

import kernelarc_oracle  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
