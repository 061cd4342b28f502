"""Experiments: the sweep layer (cells x runs, backends, run files, reports) and the paper's experiments.

``sweep`` drives cells x runs and writes every file; ``backends`` compute the units (serial, process pool);
``results`` holds the run-file format; ``reports`` writes ``summary.csv``, ``report.json`` and figures; one module
per experiment (``car_irl``, ``car_bc``, with ``car_result`` for the layout of a car run and ``car_report`` for its
report).
"""

from curteach_teaching.experiments.backends import Backend, ProcessBackend, SerialBackend
from curteach_teaching.experiments.car_irl import CarIRLExperiment, original_would_crash, parse_init
from curteach_teaching.experiments.car_report import CarReport, summarize
from curteach_teaching.experiments.reports import Report, read_summary
from curteach_teaching.experiments.results import RunResult, load_run, save_run
from curteach_teaching.experiments.sweep import (
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
    "CarIRLExperiment",
    "CarReport",
    "ProcessBackend",
    "Report",
    "RunResult",
    "SerialBackend",
    "SingleCellExperiment",
    "SweepResult",
    "SweepSession",
    "load_run",
    "make_backend",
    "original_would_crash",
    "parse_init",
    "read_summary",
    "run_seed_sequence",
    "run_sweep",
    "save_run",
    "summarize",
]
