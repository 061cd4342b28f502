"""The outputs of ``curteach car-trainers``: ``summary.csv``, ``report.json`` and one figure per trainer.

``summary.csv`` has the columns ``trainer, curriculum, step, mean, sem, n``: the exact expected reward of the
learners of every ``trainer x curriculum`` cell after ``step`` curriculum epochs (0 = before teaching), its standard
error over runs and the number of runs.

``report.json`` adds, per trainer, **how much sooner each curriculum reaches a target reward than Agn**
(:func:`steps_to_target`): in run ``r`` the target is ``initial_r + fraction * (best_r - initial_r)``, with
``best_r`` the best final reward of the trainer's curricula in that run (runs share the road and the learner, so
the comparison is paired); a curve that never reaches it counts ``steps + 1``. For each curriculum: the mean +- sem
of its steps to the target, how many runs reached it, and the paired difference to Agn (negative: sooner).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curteach_teaching.experiments.car.trainers import CURVE, cell_name
from curteach_teaching.sweeps.reports import Report, mean_sem, write_summary

__all__ = ["SUMMARY_COLUMNS", "TARGET_FRACTION", "CarTrainersReport", "steps_to_target"]

#: The columns of ``summary.csv``.
SUMMARY_COLUMNS = ("trainer", "curriculum", "step", "mean", "sem", "n")
#: The share of the way from the initial to the best final reward that defines a run's target.
TARGET_FRACTION = 0.8


def steps_to_target(curves: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``(R,)`` the first step at which each run's curve reaches its target; ``L`` (one past the last step) when it
    never does.

    Args:
        curves: ``(R, L)`` one curve per run.
        target: ``(R,)`` one target per run.
    """
    reached = curves >= np.asarray(target)[:, None]
    return np.where(reached.any(axis=1), reached.argmax(axis=1), curves.shape[1])


class CarTrainersReport(Report):
    """:class:`~curteach_teaching.sweeps.reports.Report` of
    :class:`~curteach_teaching.experiments.car.trainers.CarTrainersExperiment` (see the module docstring)."""

    label = "curriculum"
    metric_name = "expected reward"

    def _stack(self, sweep, trainer: str, curriculum: str) -> np.ndarray:
        runs = sweep.cells.get(cell_name(trainer, curriculum), [])
        return np.array([run.curves[CURVE] for run in runs]).reshape(len(runs), self.experiment.steps + 1)

    def paired(self, sweep) -> dict:
        """Per trainer, every curriculum against that trainer's Agn, run by run
        (:func:`~curteach_teaching.sweeps.paired.paired_comparison`; steps to 90 % of Agn's improvement)."""
        from curteach_teaching.sweeps.paired import paired_comparison, statistics_to_json
        from curteach_teaching.sweeps.paired_text import summary_lines
        from curteach_teaching.sweeps.reports import improvement_target
        from curteach_teaching.sweeps.sample_size import sample_size_note

        out = {}
        for trainer in self.experiment.trainer_names:
            curves = {c: self._stack(sweep, trainer, c) for c in self.experiment.curriculum_names}
            if "Agn" not in curves or len(curves) < 2 or len({c.shape[0] for c in curves.values()}) != 1:
                continue
            if curves["Agn"].shape[0] < 2 or not all(np.isfinite(c).all() for c in curves.values()):
                continue
            target = improvement_target(curves["Agn"])
            stats = paired_comparison({c: s[:, -1] for c, s in curves.items()}, baseline="Agn", curves=curves,
                                      steps=np.arange(self.experiment.steps + 1), target=target, rng=0)
            out[trainer] = {"target": target, "statistics": statistics_to_json(stats),
                            "lines": [f"{trainer}: {line}" for line in summary_lines(stats)],
                            "note": sample_size_note(stats)}
        return out

    def print_paired(self, report: dict) -> None:
        """Each trainer's paired statistics."""
        for trainer, paired in (report.get("paired") or {}).items():
            print(f"paired against {trainer}'s Agn (steps to {paired['target']:.3g}):")
            for line in paired["lines"]:
                print(f"  {line}")
            if paired.get("note"):
                print(f"  {paired['note']}")

    def summary_rows(self, sweep) -> list:
        """One row per trainer, curriculum and step (``SUMMARY_COLUMNS``)."""
        rows = []
        for trainer in self.experiment.trainer_names:
            for curriculum in self.experiment.curriculum_names:
                stack = self._stack(sweep, trainer, curriculum)
                if stack.shape[0] == 0:
                    continue
                mean, sem = mean_sem(stack)
                rows += [{"trainer": trainer, "curriculum": curriculum, "step": step, "mean": float(mean[step]),
                          "sem": float(sem[step]), "n": int(stack.shape[0])} for step in range(stack.shape[1])]
        return rows

    def write_summary(self, rows: list, path: Path) -> None:
        """Write ``summary.csv`` (``SUMMARY_COLUMNS``; :func:`~curteach_teaching.sweeps.reports.write_summary`)."""
        write_summary(rows, path, columns=SUMMARY_COLUMNS)

    def final(self, rows: list, sweep) -> dict:
        """``{trainer: {curriculum: {"mean", "sem", "n"}}}`` at the last step."""
        last = self.experiment.steps
        final: dict = {}
        for row in rows:
            if row["step"] == last:
                final.setdefault(row["trainer"], {})[row["curriculum"]] = {k: row[k] for k in ("mean", "sem", "n")}
        return final

    def report_data(self, sweep, rows: list) -> dict:
        """``steps_to_target``: per trainer, each curriculum's steps to the run's target and the paired difference
        to Agn (see the module docstring)."""
        result = {}
        for trainer in self.experiment.trainer_names:
            stacks = {c: self._stack(sweep, trainer, c) for c in self.experiment.curriculum_names}
            n = min(stack.shape[0] for stack in stacks.values())
            if n == 0:
                continue
            stacks = {c: stack[:n] for c, stack in stacks.items()}  # the runs every curriculum has (paired)
            initial = next(iter(stacks.values()))[:, 0]
            best = np.max([stack[:, -1] for stack in stacks.values()], axis=0)
            target = initial + TARGET_FRACTION * (best - initial)
            steps = {c: steps_to_target(stack, target) for c, stack in stacks.items()}
            entry = {}
            for curriculum, taken in steps.items():
                mean, sem = mean_sem(taken[:, None].astype(float))
                item = {"mean": float(mean[0]), "sem": float(sem[0]), "n": n,
                        "reached": int((taken <= self.experiment.steps).sum())}
                if "Agn" in steps and curriculum != "Agn":
                    diff_mean, diff_sem = mean_sem((taken - steps["Agn"])[:, None].astype(float))
                    item["minus_agn"] = {"mean": float(diff_mean[0]), "sem": float(diff_sem[0])}
                entry[curriculum] = item
            result[trainer] = entry
        return {"target_fraction": TARGET_FRACTION, "steps_to_target": result}

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """``learning_curves_<trainer>.png``: mean +- sem of every curriculum, one figure per trainer."""
        from curteach_teaching.plots import plot_learning_curves

        names = []
        for trainer in self.experiment.trainer_names:
            mine = [{**r, "teacher": r["curriculum"], "t": r["step"]} for r in rows if r["trainer"] == trainer]
            if not mine:
                continue
            name = f"learning_curves_{trainer}.png"
            plot_learning_curves(mine, out_dir / name, teachers=list(self.experiment.curriculum_names), spacing=1,
                                 reference=extras.get("expert_reward"),
                                 title=f"{trainer}: curricula over demonstrations on the car (x: curriculum epochs)")
            names.append(name)
        return names

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """Each trainer's final rewards."""
        for trainer, entries in report["final"].items():
            text = ", ".join(f"{c} {v['mean']:.3f}" for c, v in entries.items())
            print(f"final expected reward, {trainer} (n={next(iter(entries.values()))['n']}): {text}")
