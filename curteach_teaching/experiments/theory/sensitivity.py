"""Sensitivity of the car experiments to the learner's rate (and the projection radius): one cell per setting.

:class:`SensitivityExperiment` wraps a car experiment (:class:`~curteach_teaching.experiments.car.irl.
CarIRLExperiment` or :class:`~curteach_teaching.experiments.car.bc.CarBCExperiment`) and varies one rate field
(``teaching_rate`` or ``learning_rate``) and, for MaxEnt-IRL, ``projection_radius``. Each combination is a cell,
named like ``eta=0.17`` or ``eta=0.17_R=5``; run ``i`` of every cell uses ``SeedSequence([seed, i])``, so every
cell teaches on the same road with the same demonstrations (paired), and a cell's run ``i`` is exactly run ``i``
of the wrapped experiment with that setting (tested).

:class:`SensitivityReport` writes ``summary.csv`` (``cell, teacher, subset, t, mean, sem, n``), ``report.json``
(per cell: the final means, the flagged share and the diverged share per teacher), learning curves per cell, and
two figures against the rate (log x-axis): ``final_reward_vs_rate.png`` (per teacher, all runs, mean ± SEM) and
``stability_vs_rate.png`` (the share of runs the original would have crashed, and per teacher the share of runs
whose learner diverged), and ``steps_to_gap.csv`` (the paper's teaching objective per cell).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from curteach_teaching.experiments.car.report import diverged_share, flagged_fraction, gap_table, write_gap_table
from curteach_teaching.experiments.car.result import finished
from curteach_teaching.sweeps.reports import Report
from curteach_teaching.sweeps.results import RunResult

__all__ = ["SensitivityExperiment", "SensitivityReport", "cell_name", "parse_values"]

#: the rate field of each wrapped experiment
RATE_FIELDS = {"CarIRLExperiment": "teaching_rate", "CarBCExperiment": "learning_rate"}


def _number(value: float) -> str:
    return f"{value:g}"


def cell_name(rate: float, radius: float | None = None, with_radius: bool = False) -> str:
    """``"eta=0.17"``, or ``"eta=0.17_R=5"`` / ``"eta=0.17_R=none"`` when projection radii are varied."""
    name = f"eta={_number(rate)}"
    if with_radius:
        name += f"_R={'none' if radius is None else _number(radius)}"
    return name


def parse_values(text: str, option: str, allow_none: bool = False) -> tuple:
    """Comma-separated finite numbers > 0 (and ``none`` where allowed), distinct, in the given order.

    Raises:
        ValueError: an empty list, a value that is not a finite number > 0, or a repeated value (names ``option``).
    """
    values = []
    for item in (part.strip() for part in str(text).split(",")):
        if not item:
            continue
        if allow_none and item.lower() == "none":
            values.append(None)
            continue
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"{option} must be comma-separated numbers; got {item!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{option} must be finite numbers > 0; got {item!r}")
        values.append(value)
    if not values:
        raise ValueError(f"{option} needs at least one value; got {text!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"{option} holds a value twice; got {text!r}")
    return tuple(values)


@dataclass(frozen=True)
class SensitivityExperiment:
    """A car experiment run at several rates (and projection radii), one cell per combination.

    Args:
        base: the wrapped car experiment (its other settings are shared by every cell).
        rates: the rates (``teaching_rate`` for MaxEnt-IRL, ``learning_rate`` for BC), each > 0.
        radii: projection radii (MaxEnt-IRL only; ``None`` in the tuple means no projection). ``None`` (default):
            every cell keeps the base's radius and cell names omit it.
    """

    base: object
    rates: tuple
    radii: tuple | None = None

    def __post_init__(self):
        kind = type(self.base).__name__
        if kind not in RATE_FIELDS:
            raise ValueError(f"base must be one of {sorted(RATE_FIELDS)}; got {kind}")
        object.__setattr__(self, "rates", tuple(float(r) for r in self.rates))
        if not self.rates or len(set(self.rates)) != len(self.rates):
            raise ValueError(f"rates must be distinct and at least one; got {list(self.rates)}")
        if self.radii is not None:
            if kind != "CarIRLExperiment":
                raise ValueError("projection radii apply to the MaxEnt-IRL learner (car-irl) only")
            radii = tuple(None if r is None else float(r) for r in self.radii)
            if not radii or len(set(radii)) != len(radii):
                raise ValueError(f"radii must be distinct and at least one; got {list(self.radii)}")
            object.__setattr__(self, "radii", radii)
        for rate, radius in self.settings_grid():  # the wrapped experiment validates each value
            self.experiment_for(rate, radius)

    @property
    def rate_field(self) -> str:
        """``"teaching_rate"`` or ``"learning_rate"``."""
        return RATE_FIELDS[type(self.base).__name__]

    @property
    def teachers(self) -> tuple:
        """The wrapped experiment's teachers (the same in every cell)."""
        return self.base.teachers

    def settings_grid(self) -> list:
        """``(rate, radius)`` per cell, rates varying fastest within each radius (radius ``None`` without radii)."""
        radii = self.radii if self.radii is not None else (getattr(self.base, "projection_radius", None),)
        return [(rate, radius) for radius in radii for rate in self.rates]

    @property
    def cells(self) -> tuple:
        """One cell name per ``(rate, radius)`` of :meth:`settings_grid`."""
        with_radius = self.radii is not None
        return tuple(cell_name(rate, radius, with_radius) for rate, radius in self.settings_grid())

    def setting_of(self, cell: str) -> tuple:
        """The ``(rate, radius)`` of ``cell``."""
        return dict(zip(self.cells, self.settings_grid(), strict=True))[cell]

    def experiment_for(self, rate: float, radius: float | None):
        """The wrapped experiment with this rate (and radius)."""
        changes = {self.rate_field: rate}
        if self.radii is not None:
            changes["projection_radius"] = radius
        return replace(self.base, **changes)

    def settings(self) -> dict:
        """The wrapped experiment's settings without the varied fields, plus the rates (and radii)."""
        data = dict(self.base.settings())
        data.pop(self.rate_field, None)
        if self.radii is not None:
            data.pop("projection_radius", None)
            data["radii"] = list(self.radii)
        data["rates"] = list(self.rates)
        data["experiment"] = f"{data['experiment']}-sensitivity"
        return data

    def run_cell(self, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """Run ``index`` of the wrapped experiment with ``cell``'s setting."""
        if cell not in self.cells:
            raise ValueError(f"cell must be one of {list(self.cells)}; got {cell!r}")
        return replace(self.experiment_for(*self.setting_of(cell)).run(index, seed_sequence), cell=cell)


class SensitivityReport(Report):
    """Outputs of a :class:`SensitivityExperiment` sweep (see the module docstring)."""

    label = "teacher"
    reference_extra = "expert_reward"
    extras_not_averaged = ("crash_step", "diverged")
    metric_name = "expected reward"
    curves_compared = True

    def __init__(self, experiment: SensitivityExperiment, title: str = ""):
        super().__init__(experiment, curves=experiment.teachers, title=title)
        self.crash_flag = type(experiment.base).__name__ == "CarIRLExperiment"

    def subsets(self) -> dict:
        """``all``, and for MaxEnt-IRL the runs the original would have ``finished``."""
        return {"all": None, "finished": finished} if self.crash_flag else {"all": None}

    def subset_label(self, subset: str) -> str:
        """The subset in words."""
        return "runs the original would have finished" if subset == "finished" else "all runs"

    def _per_cell(self, sweep) -> dict:
        """Per cell: rate, radius, runs, flagged share, diverged share per teacher, final mean and SEM (all runs)."""
        teachers = list(self.experiment.teachers)
        table = {}
        for cell, results in sweep.cells.items():
            rate, radius = self.experiment.setting_of(cell)
            finals = np.array([[r.curves[name][-1] for name in teachers] for r in results])  # (R, teachers)
            mean = finals.mean(axis=0)
            sem = finals.std(axis=0, ddof=1) / np.sqrt(len(results)) if len(results) > 1 else np.full(len(teachers),
                                                                                                      np.nan)
            table[cell] = {
                "rate": rate,
                "radius": radius,
                "runs": len(results),
                "flagged_share": flagged_fraction(results) if self.crash_flag else None,
                "diverged_share": diverged_share(results, teachers),
                "final_mean": dict(zip(teachers, mean.tolist(), strict=True)),
                "final_sem": dict(zip(teachers, sem.tolist(), strict=True)),
            }
        return table

    def tables(self, sweep, rows: list, out_dir: Path, report: dict) -> list:
        """``steps_to_gap.csv``: per cell, teacher and fraction of the initial gap, the runs that reached it and the
        median steps (all runs; see :func:`~curteach_teaching.experiments.car.report.gap_table`)."""
        table = [{"cell": cell, **row} for cell, results in sweep.cells.items()
                 for row in gap_table(results, list(self.experiment.teachers))]
        report["steps_to_gap"] = table
        write_gap_table(table, out_dir / "steps_to_gap.csv")
        return ["steps_to_gap.csv"]

    def report_data(self, sweep, rows: list) -> dict:
        """``rate_field`` and ``by_cell`` (rate, radius, runs, flagged and diverged shares, final mean and SEM)."""
        return {"rate_field": self.experiment.rate_field, "by_cell": self._per_cell(sweep)}

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """Learning curves per cell and subset, the final reward and the stability against the rate."""
        from curteach_teaching.plots import plot_against_rate

        names = super().figures(sweep, rows, out_dir, extras)
        table = self._per_cell(sweep)
        rate_label = "teaching rate η" if self.crash_flag else "learning rate"
        names.append(plot_against_rate(table, list(self.experiment.teachers), out_dir / "final_reward_vs_rate.png",
                                       kind="final", xlabel=rate_label, title=self.title).name)
        names.append(plot_against_rate(table, list(self.experiment.teachers), out_dir / "stability_vs_rate.png",
                                       kind="stability", xlabel=rate_label, title=self.title,
                                       crash_flag=self.crash_flag).name)
        return names

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """Per cell: the final expected reward per teacher (all runs) and the flagged and diverged shares."""
        for cell, entry in report["by_cell"].items():
            ranked = sorted(entry["final_mean"].items(), key=lambda item: -item[1])
            text = ", ".join(f"{name} {value:.3f}" for name, value in ranked)
            stability = []
            if entry["flagged_share"] is not None:
                stability.append(f"flagged {entry['flagged_share']:.2f}")
            diverged = {name: v for name, v in entry["diverged_share"].items() if v > 0}
            if diverged:
                stability.append("diverged " + ", ".join(f"{n} {v:.2f}" for n, v in diverged.items()))
            extra = f"  [{'; '.join(stability)}]" if stability else ""
            print(f"{cell} (n={entry['runs']}): final expected reward, all runs: {text}{extra}")
