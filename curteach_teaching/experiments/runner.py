"""The former runner of the car experiments, kept so that old imports work.

The sweep layer now lives in :mod:`curteach_teaching.experiments.sweep` (cells x runs, the driver),
:mod:`curteach_teaching.experiments.backends` (serial, process pool) and
:mod:`curteach_teaching.experiments.reports` (summary, report, figures). :func:`write_outputs` is the car
experiments' report (:class:`~curteach_teaching.experiments.car_report.CarReport`).
"""

from __future__ import annotations

from pathlib import Path

from curteach_teaching.experiments.backends import run_seed_sequence
from curteach_teaching.experiments.sweep import SweepResult, check_sweep_arguments, run_sweep

__all__ = ["SweepResult", "run_seed_sequence", "run_sweep", "write_outputs", "check_sweep_arguments"]


def write_outputs(
    experiment,
    sweep: SweepResult,
    out_dir: Path,
    heatmap_teacher: str | None = None,
    figures: bool = True,
    title: str = "",
) -> dict:
    """Write a car sweep's ``summary.csv``, ``report.json`` and figures (:class:`CarReport`); return the report."""
    from curteach_teaching.experiments.car_report import CarReport

    return CarReport(experiment, heatmap_teacher=heatmap_teacher, title=title).write(sweep, out_dir, figures=figures)
