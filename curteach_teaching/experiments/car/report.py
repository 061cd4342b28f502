"""What the car experiments (``car-irl``, ``car-irl-observability``, ``car-bc``) report over their runs.

The layout of one car run is :mod:`curteach_teaching.experiments.car.result`. The runs the original would have
finished form the subset ``"finished"``; :class:`CarReport` reports both subsets, the flagged fraction, the steps to
fractions of the initial gap, learning curves and curriculum heat maps.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_envs._util import atomic_write, counted
from curteach_teaching.experiments.car.result import crash_step, diverged_steps, finished
from curteach_teaching.sweeps.reports import Report, summarize
from curteach_teaching.sweeps.results import RunResult

__all__ = [
    "GAP_FRACTIONS",
    "SUBSETS",
    "CarReport",
    "car_summary_rows",
    "diverged_share",
    "gap_table",
    "steps_to_gap",
    "write_gap_table",
    "flagged_fraction",
]

SUBSETS = ("all", "finished")

#: fractions of the initial gap |V^E - V^L_0| at which the steps to reach it are reported
GAP_FRACTIONS = (0.5, 0.2, 0.1)


def steps_to_gap(curve: np.ndarray, expert_reward: float, fractions: Sequence[float] = GAP_FRACTIONS) -> list:
    """The paper's teaching objective (Section 2): per fraction ``f``, the first step ``t`` with
    ``|V^E - V^L_t| <= f * |V^E - V^L_0|``, or ``None`` if the run never gets there.

    Args:
        curve: ``(T + 1,)`` the learner's expected reward after ``0..T`` steps.
        expert_reward: ``V^E``.
        fractions: the fractions of the initial gap.
    """
    gap = np.abs(expert_reward - np.asarray(curve, dtype=np.float64))
    steps = []
    for fraction in fractions:
        hit = np.flatnonzero(gap <= fraction * gap[0])
        steps.append(int(hit[0]) if hit.size else None)
    return steps


def gap_table(results: Sequence[RunResult], teachers: Sequence[str], fractions: Sequence[float] = GAP_FRACTIONS
              ) -> list[dict]:
    """Rows ``teacher, fraction, n, reached, median_steps`` over ``results`` (all runs): how many runs reached
    each fraction of the initial gap within the run, and the median steps to it with the runs that never did counted
    as never (``None`` unless more than half of the runs reached it)."""
    rows = []
    for name in teachers:
        per_run = [steps_to_gap(r.curves[name], r.extras["expert_reward"], fractions) for r in results]
        for k, fraction in enumerate(fractions):
            steps = [run[k] for run in per_run]
            reached = sorted(t for t in steps if t is not None)
            n = len(steps)
            # the median of all runs, a run that never reached it counting as infinitely many steps
            median = float(np.median(reached + [np.inf] * (n - len(reached)))) if n else float("nan")
            rows.append({"teacher": name, "fraction": fraction, "n": n, "reached": len(reached),
                         "median_steps": median if np.isfinite(median) else None})
    return rows


def write_gap_table(rows: Sequence[dict], path: Path) -> None:
    """Write :func:`gap_table` rows (with a leading ``cell`` key where present) as CSV, atomically; a median of
    ``None`` is written as ``never``."""
    fields = (["cell"] if rows and "cell" in rows[0] else []) + ["teacher", "fraction", "n", "reached", "median_steps"]

    def write(stream) -> None:
        writer = csv.DictWriter(stream, fieldnames=fields)
        writer.writeheader()
        writer.writerows({**row, "median_steps": "never" if row["median_steps"] is None else row["median_steps"]}
                         for row in rows)

    atomic_write(path, write, newline="")


def diverged_share(results: Sequence[RunResult], teachers: Sequence[str]) -> dict:
    """Teacher -> the fraction of ``results`` in which its learner diverged (NaN for no runs)."""
    if not results:
        return {name: float("nan") for name in teachers}
    return {name: sum(name in diverged_steps(r) for r in results) / len(results) for name in teachers}


def flagged_fraction(results: Sequence[RunResult]) -> float:
    """Fraction of runs the original code would not have finished (NaN for no runs)."""
    if not results:
        return float("nan")
    return sum(not finished(r) for r in results) / len(results)


def car_summary_rows(results: Sequence[RunResult], teachers: Sequence[str]) -> list:
    """The car's tidy table: rows ``teacher, subset, t, mean, sem, n`` for the subsets ``all`` and ``finished``."""
    return summarize(results, teachers, subsets={"all": None, "finished": finished})


class CarReport(Report):
    """``summary.csv`` over the subsets ``all`` and ``finished``, ``report.json`` with the flagged runs,
    ``learning_curves_{all,finished}.png`` and ``curriculum_<teacher>_{all,finished}.png``.

    Args:
        experiment: a car experiment (``teachers``, ``settings()``).
        heatmap_teacher: whose curriculum heat map is drawn (default: the first teacher).
        title: the figures' title prefix.
        crash_flag: whether the experiment's original could crash (MaxEnt-IRL). Without it (CrossEnt-BC) there is
            only the subset ``all`` and nothing is said about crashes.
    """

    label = "teacher"
    reference_extra = "expert_reward"
    extras_not_averaged = ("crash_step", "diverged")
    curves_compared = True
    metric_name = "expected reward"

    def __init__(self, experiment, *, heatmap_teacher: str | None = None, title: str = "",
                 crash_flag: bool = True):
        super().__init__(experiment, curves=experiment.teacher_names, title=title)
        self.crash_flag = crash_flag
        teachers = list(experiment.teacher_names)
        self.heatmap_teacher = heatmap_teacher or teachers[0]
        if self.heatmap_teacher not in teachers:
            raise ValueError(f"heat-map teacher must be one of {teachers}; got {self.heatmap_teacher!r}")

    def subsets(self) -> dict:
        """``all`` runs, and (with the crash flag) those the original would have ``finished``."""
        return {"all": None, "finished": finished} if self.crash_flag else {"all": None}

    def subset_label(self, subset: str) -> str:
        """``"all runs"`` or ``"runs the original would have finished"``."""
        return "runs the original would have finished" if subset == "finished" else "all runs"

    def runs_label(self, subset: str, count: int) -> str:
        """A subset's runs with their number: ``"all 4 runs"``, ``"3 runs the original would have finished"``."""
        if subset == "finished":
            return f"{counted(count, 'run')} the original would have finished"
        return "the only run" if count == 1 else f"all {count} runs"

    def report_data(self, sweep, rows: list) -> dict:
        """The flagged runs (run -> crash step) and their fraction."""
        results = sweep.results
        diverged = {r.index: diverged_steps(r) for r in results if diverged_steps(r)}
        data = {
            "diverged_runs": {str(k): v for k, v in sorted(diverged.items())},
            "diverged_share": diverged_share(results, list(self.experiment.teacher_names)),
        }
        sizes = [r.extras["scot_batch_size"] for r in results if "scot_batch_size" in r.extras]
        if sizes:
            data["scot_batch_size"] = {"median": float(np.median(sizes)), "min": min(sizes), "max": max(sizes)}
        if self.crash_flag:
            flagged = {r.index: crash_step(r) for r in results if not finished(r)}
            data = {
                "flagged_runs": {str(k): v for k, v in sorted(flagged.items())},
                "flagged_fraction": flagged_fraction(results),
                **data,
            }
        return data

    def tables(self, sweep, rows: list, out_dir: Path, report: dict) -> list:
        """``steps_to_gap.csv``: per teacher and fraction of the initial gap, the runs that reached it and the
        median steps (all runs; see :func:`gap_table`)."""
        table = gap_table(sweep.results, list(self.experiment.teacher_names))
        report["steps_to_gap"] = table
        write_gap_table(table, out_dir / "steps_to_gap.csv")
        return ["steps_to_gap.csv"]

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """Learning curves per subset, the heat-map teacher's curriculum per subset, and the share of runs that
        reached each fraction of the initial gap by step t."""
        from curteach_teaching.plots import plot_curriculum_heatmap, plot_steps_to_gap

        names = super().figures(sweep, rows, out_dir, extras)
        chosen = self.heatmap_teacher
        results = sweep.results
        for subset, rule in self.subsets().items():
            subset_runs = [r for r in results if rule is None or rule(r)]
            if not subset_runs:
                continue
            name = f"curriculum_{chosen.replace(' ', '_')}_{subset}.png"
            plot_curriculum_heatmap(
                np.array([r.records["pick_types"][chosen] for r in subset_runs]), out_dir / name,
                title=f"{chosen}: share of runs that picked each task type at step t\n"
                f"({self.runs_label(subset, len(subset_runs))})",
            )
            names.append(name)
        curves = {name: [steps_to_gap(r.curves[name], r.extras["expert_reward"]) for r in results]
                  for name in self.experiment.teacher_names}
        names.append(plot_steps_to_gap(curves, GAP_FRACTIONS, len(next(iter(results)).curves[chosen]) - 1,
                                       out_dir / "steps_to_gap.png", title=self.title).name)
        return names

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """The flagged runs and the final expected reward per subset."""
        results = sweep.results
        unchecked = sum(r.extras.get("crash_checked") is False for r in results)
        if unchecked and self.crash_flag:
            print(
                f"note: the crash flag was not checked in {unchecked} run(s) (no Cur teacher); "
                "they count as finished"
            )
        if self.crash_flag:
            flagged = report["flagged_runs"]
            print(
                f"flagged (the original would have crashed): {len(flagged)}/{len(results)} = "
                f"{report['flagged_fraction']:.2f}"
                + (f"  at steps {sorted(flagged.values())}" if flagged else "")
            )
        if "scot_batch_size" in report:
            size = report["scot_batch_size"]
            print(f"Scot's batch: median {size['median']:g} starts (min {size['min']}, max {size['max']})")
        share = {name: value for name, value in report["diverged_share"].items() if value > 0}
        if share:
            text = ", ".join(f"{name} {value:.2f}" for name, value in share.items())
            print(f"diverged (learner kept its last finite parameters): share of runs {text}")
        final = report["final"]
        for subset in SUBSETS:
            if subset not in final:
                continue
            entries = sorted(final[subset].items(), key=lambda item: -np.nan_to_num(item[1]["mean"], nan=-np.inf))
            n = next(iter(final[subset].values()))["n"]
            if n == 0:
                print(f"final expected reward, {subset}: no run is in this subset (n=0)")
                continue
            text = ", ".join(f"{name} {v['mean']:.3f}" for name, v in entries)
            print(f"final expected reward, {subset} (n={n}): {text}")
