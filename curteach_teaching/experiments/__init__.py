"""Experiments: a generic runner (seeded, parallel, atomic, resumable), results I/O, and the paper's experiments."""

from curteach_teaching.experiments.car_irl import CarIRLExperiment, original_would_crash, parse_init
from curteach_teaching.experiments.results import RunResult, load_run, read_summary, save_run, summarize
from curteach_teaching.experiments.runner import SweepResult, run_seed_sequence, run_sweep, write_outputs

__all__ = [
    "CarIRLExperiment",
    "RunResult",
    "SweepResult",
    "load_run",
    "original_would_crash",
    "parse_init",
    "read_summary",
    "run_seed_sequence",
    "run_sweep",
    "save_run",
    "summarize",
    "write_outputs",
]
