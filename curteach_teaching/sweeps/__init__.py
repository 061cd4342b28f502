"""The sweep runner: cells x runs, seeded and paired, on any backend; it knows no experiment.

``sweep`` drives cells x runs and writes every file; ``backends``, ``process_pool`` and ``ray_backend`` compute the
units (serial, a process pool, Ray tasks); ``results`` holds the run-file format and ``folders`` the output folder
and its lock; ``fingerprints`` reads what each setting declares about the runs' fingerprint; ``reports`` writes
``summary.csv``, ``report.json`` and figures; ``tracking`` and ``run_scalars`` log runs to TensorBoard, CSV or W&B;
``interrupts`` turns Ctrl-C into a clean stop. An experiment (one package of :mod:`curteach_teaching.experiments`)
gives the cells and the run function.
"""

from curteach_teaching.sweeps.backends import Backend, ProcessBackend, SerialBackend
from curteach_teaching.sweeps.fingerprints import NEVER, WHEN_NOT_DEFAULT, setting
from curteach_teaching.sweeps.reports import Report, read_summary
from curteach_teaching.sweeps.results import RunResult, load_run, save_run
from curteach_teaching.sweeps.sweep import (
    BACKENDS,
    SingleCellExperiment,
    SweepResult,
    SweepSession,
    make_backend,
    run_seed_sequence,
    run_sweep,
)

__all__ = [
    "BACKENDS",
    "Backend",
    "NEVER",
    "ProcessBackend",
    "Report",
    "RunResult",
    "SerialBackend",
    "SingleCellExperiment",
    "SweepResult",
    "SweepSession",
    "WHEN_NOT_DEFAULT",
    "load_run",
    "make_backend",
    "read_summary",
    "run_seed_sequence",
    "run_sweep",
    "save_run",
    "setting",
]
