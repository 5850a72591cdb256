"""kernelarc from Python: the CLI's commands as functions, and solutions as torch ops.

    import kernelarc
    summary = kernelarc.optimize("problems/cpu/rmsnorm_f32", budget=8, workloads="largest")
    traces = kernelarc.eval("problems/cpu/rmsnorm_f32",
                            "problems/cpu/rmsnorm_f32/solutions/optimized")
    import kernelarc.torch
    op = kernelarc.torch.compile_op("latest")  # the run's winner as the torch op kernelarc::<name>

Errors in what was given (a path, a field, an argument) raise ValueError with the message the
CLI prints; other failures raise RuntimeError. Candidates run in worker processes of the
kernelarc executable built beside this package (KERNELARC_EXECUTABLE overrides it), and the
oracle's reference runs in this interpreter unless python= (or KERNELARC_PYTHON) says otherwise.
kernelarc.torch is imported on demand, so that `import kernelarc` does not import torch.
"""

from ._kernelarc import eval, export_torch, load, optimize, runs, worker_executable

__all__ = ["optimize", "eval", "runs", "load", "export_torch", "worker_executable"]
