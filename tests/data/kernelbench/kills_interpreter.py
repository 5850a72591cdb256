import os
import signal

import torch
import torch.nn as nn


class Model(nn.Module):
    """A problem file whose get_inputs() kills the interpreter running it, as a crash in native
    code would: the files imported after it must still be imported."""

    def forward(self, x):
        return x * 2


def get_inputs():
    os.kill(os.getpid(), signal.SIGKILL)


def get_init_inputs():
    return []
