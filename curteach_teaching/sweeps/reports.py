"""Reports of a sweep: ``summary.csv``, ``report.json`` and the figures, configured by each experiment.

:class:`Report` writes what every sweep has: the tidy summary table (one row per curve, subset and step, with the
mean, standard error and number of runs), ``report.json`` (settings, final means, mean extras, files) and learning
curves. An experiment configures it by subclassing: which runs form which subset (:meth:`Report.subsets`), what else
goes into ``report.json`` (:meth:`Report.report_data`), which extra figures it draws (:meth:`Report.figures`) and
what it prints. The car experiments' report is :class:`~curteach_teaching.experiments.car.report.CarReport`.

``summary.csv`` has the columns ``teacher, subset, t, mean, sem, n`` (the first is named by :attr:`Report.label`),
with a leading ``cell`` column when the experiment has more than one cell.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from curteach_envs._util import atomic_write, counted
from curteach_teaching.sweeps.folders import library_version, remove_stale_outputs
from curteach_teaching.sweeps.results import RunResult

__all__ = ["Report", "improvement_target", "mean_sem", "read_summary", "stack_runs", "strict_json", "summarize",
           "write_summary"]

#: A subset's rule: which runs it holds (``None``: every run).
SubsetRule = Callable[[RunResult], bool] | None


def strict_json(value):
    """``value`` with every non-finite float replaced by ``None`` (JSON has no NaN or infinity), recursively
    through dicts, lists and tuples; NumPy scalars become Python numbers."""
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def stack_runs(results: Sequence[RunResult], curve: str, steps: str) -> tuple[np.ndarray, np.ndarray]:
    """``(K,)`` steps and ``(R, K)`` values of ``curve`` over one cell's runs, cut to the shortest run; the steps are
    the first run's ``records["batches"][steps]`` (the optimizer steps of a learner's evaluations)."""
    length = min(len(r.curves[curve]) for r in results)
    batches = np.asarray(results[0].records["batches"][steps][:length])
    return batches, np.array([r.curves[curve][:length] for r in results])


def improvement_target(baseline_curves: np.ndarray, share: float = 0.9) -> float:
    """The value whose first reaching the paired statistics time: ``start + share * (end - start)``, ``start`` and
    ``end`` the baseline's mean first and last values over its ``(R, K)`` curves (90 % of its improvement, in either
    direction and whatever the sign of the metric)."""
    start, end = float(baseline_curves[:, 0].mean()), float(baseline_curves[:, -1].mean())
    return start + share * (end - start)


def mean_sem(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over runs.

    Args:
        stack: ``(R, L)`` one row per run.

    Returns:
        ``(L,)`` mean and ``(L,)`` SEM (``std(ddof=1) / sqrt(R)``); SEM is NaN with fewer than 2 runs, both are NaN
        with none.
    """
    n = stack.shape[0]
    if n == 0:
        nan = np.full(stack.shape[1], np.nan)
        return nan, nan
    mean = stack.mean(axis=0)
    sem = stack.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(stack.shape[1], np.nan)
    return mean, sem


def summarize(
    results: Sequence[RunResult],
    curves: Sequence[str],
    *,
    subsets: Mapping[str, SubsetRule] | None = None,
    label: str = "teacher",
    cell: str | None = None,
) -> list[dict]:
    """The tidy table: one row per (curve, subset, t) with ``mean``, ``sem`` (over runs) and ``n`` runs.

    Args:
        results: the runs of one cell.
        curves: the curve names, in row order.
        subsets: subset name -> rule (default ``{"all": None}``).
        label: the key of the curve name in each row.
        cell: if given, every row starts with ``"cell": cell``.
    """
    if not results:
        return []
    subsets = {"all": None} if subsets is None else dict(subsets)
    chosen_runs = {name: [r for r in results if rule is None or rule(r)] for name, rule in subsets.items()}
    rows = []
    for curve in curves:
        length = results[0].curves[curve].shape[0]
        for subset, chosen in chosen_runs.items():
            stack = np.array([r.curves[curve] for r in chosen]).reshape(len(chosen), length)
            mean, sem = mean_sem(stack)
            for t in range(length):
                row = {} if cell is None else {"cell": cell}
                row.update({label: curve, "subset": subset, "t": t, "mean": float(mean[t]), "sem": float(sem[t]),
                            "n": len(chosen)})
                rows.append(row)
    return rows


def write_summary(rows: Sequence[dict], path: Path, *, label: str = "teacher",
                  columns: Sequence[str] | None = None) -> None:
    """Write a summary table as CSV, atomically: the columns ``[cell,] LABEL, subset, t, mean, sem, n`` of
    :func:`summarize`, or ``columns`` (an experiment's own table).

    Floats are written with ``repr``, so they read back exactly.
    """
    if columns is None:
        columns = [label, "subset", "t", "mean", "sem", "n"]
        if rows and "cell" in rows[0]:
            columns = ["cell", *columns]

    def write(stream) -> None:
        writer = csv.DictWriter(stream, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({key: repr(value) if isinstance(value, float) else value for key, value in row.items()})

    atomic_write(path, write, newline="")


def read_summary(path: Path) -> list[dict]:
    """Read a summary CSV back (``t``, ``batches``, ``n`` as int; ``mean``, ``sem`` as float; other columns as
    text)."""
    with open(path, newline="") as stream:
        rows = []
        for row in csv.DictReader(stream):
            row = dict(row)
            row.update({key: int(row[key]) for key in ("t", "batches", "n") if key in row})
            row.update({key: float(row[key]) for key in ("mean", "sem") if key in row})
            rows.append(row)
        return rows


class Report:
    """The outputs of a sweep; experiments subclass it to configure them.

    Args:
        experiment: the experiment (its ``settings()`` go into ``report.json``).
        curves: the curve names, in the order of rows and legends (default: those of the first run).
        title: the figures' title prefix.
    """

    #: column name of the curve names in ``summary.csv``
    label = "teacher"
    #: the extra (per run) drawn as a dotted reference line in the learning curves, if present
    reference_extra: str | None = None
    #: extras left out of ``report.json``'s ``extras_mean``
    extras_not_averaged: tuple = ()
    #: whether a run's curves are the things compared (the car's teachers, each a curve of every run) rather than
    #: measures of one learner (navigation's test and validation returns: there the cells are compared)
    curves_compared = False

    def __init__(self, experiment, *, curves: Sequence[str] | None = None, title: str = ""):
        self.experiment = experiment
        self._curves = None if curves is None else list(curves)
        self.title = title

    # ---------------------------------------------------------------- hooks
    def subsets(self) -> dict:
        """Subset name -> rule (``None``: every run). Default: ``{"all": None}``."""
        return {"all": None}

    def curve_names(self, sweep) -> list:
        """The curve names, in row and legend order (default: those of the first run)."""
        if self._curves is not None:
            return self._curves
        return list(sweep.all_results[0].curves)

    def logged_curves(self) -> list | None:
        """The curves a logger gives a folder each, so that TensorBoard overlays them (:attr:`curves_compared`:
        the ``curves`` this report was given), or ``None``: one folder per cell and run."""
        return self._curves if self.curves_compared else None

    def report_data(self, sweep, rows: list) -> dict:
        """Extra ``report.json`` entries (default: none)."""
        return {}

    def tables(self, sweep, rows: list, out_dir: Path, report: dict) -> list:
        """Write further tables into ``out_dir`` (with or without figures); return their file names. Default:
        none."""
        return []

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """Draw the figures into ``out_dir``; return their file names. Default: learning curves per cell and
        subset."""
        from curteach_teaching.plots import plot_learning_curves

        names = []
        multi = len(sweep.cells) > 1
        for cell in sweep.cells:
            for subset in self.subsets():
                subset_rows = [r for r in rows if r["subset"] == subset and (not multi or r["cell"] == cell)]
                if not subset_rows or subset_rows[0]["n"] == 0:
                    continue
                plot_rows = [{**r, "teacher": r[self.label]} for r in subset_rows]
                name = f"learning_curves_{cell}_{subset}.png" if multi else f"learning_curves_{subset}.png"
                where = f"{cell}, " if multi else ""
                plot_learning_curves(
                    plot_rows, out_dir / name, teachers=self.curve_names(sweep),
                    reference=extras.get(self.reference_extra) if self.reference_extra else None,
                    title=f"{self.title} ({where}{self.subset_label(subset)})".strip(),
                )
                names.append(name)
        return names

    def subset_label(self, subset: str) -> str:
        """How figures name a subset of runs (``"all runs"``; experiments with other subsets say what they are)."""
        return f"{subset} runs"

    def print_runs(self, sweep, out_dir: Path) -> None:
        """Print how many runs the report covers, and how many were computed now and reused."""
        print(f"{counted(len(sweep.all_results), 'run')} ({len(sweep.computed)} computed, {len(sweep.reused)} "
              f"reused) in {out_dir}")
        beyond = []  # run files of these cells that a smaller --runs leaves out: said, not silently dropped
        for cell, results in sweep.cells.items():
            covered = {r.index for r in results}
            for path in (Path(out_dir) / "runs" / cell).glob("run_*.json"):
                index = path.stem.removeprefix("run_")
                if index.isdigit() and int(index) not in covered:
                    beyond.append(int(index))
        if beyond:
            print(f"note: {out_dir} holds {counted(len(beyond), 'more run file')} of these cells that this report "
                  f"leaves out (run indices up to {max(beyond)}); --runs {max(beyond) + 1} covers them")

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """Print the final means (after :meth:`print_runs`); experiments print what matters in theirs."""
        for cell, final in self._final_by_cell(report, sweep).items():
            for subset, entries in final.items():
                ranked = sorted(entries.items(), key=lambda item: -np.nan_to_num(item[1]["mean"], nan=-np.inf))
                n = next(iter(entries.values()))["n"]
                text = ", ".join(f"{name} {v['mean']:.3f}" for name, v in ranked)
                where = f"{cell}, " if cell is not None else ""
                print(f"final {self.metric_name}, {where}{subset} (n={n}): {text}")

    #: how :meth:`print_summary` names the curves' metric
    metric_name = "value"
    #: the curve or cell every other is compared with, pair by pair (:meth:`paired`)
    paired_baseline = "Agn"
    #: further baselines, each compared with every other curve or cell in the same way (``report.json``'s
    #: ``paired_against``; e.g. a control that the curricula must beat, beside the baseline they start from)
    more_baselines: tuple = ()
    #: whether a larger value of the metric is better (for the paired statistics)
    higher_is_better = True

    def paired(self, sweep, baseline: str | None = None) -> dict:
        """``report.json``'s ``paired``: every teacher (one cell) or cell (several cells) against ``baseline``
        (default :attr:`paired_baseline`), run by run (:func:`~curteach_teaching.sweeps.paired.paired_comparison`):
        the final value's difference with its bootstrap interval, Wilcoxon's p-value, the share of better pairs, the
        IQMs, the steps to reach :meth:`paired_target` and any :meth:`paired_scalars` (``{}`` without the baseline or
        with fewer than 2 runs). In a sweep still computing, the runs saved in every cell are the pairs. ``note``:
        what the numbers cannot show with so few pairs (:func:`~curteach_teaching.sweeps.paired.sample_size_note`), or
        None; with one run per cell the entry is only that note.
        """
        from curteach_teaching.sweeps.paired import paired_comparison, statistics_to_json
        from curteach_teaching.sweeps.paired_text import summary_lines
        from curteach_teaching.sweeps.sample_size import ALPHA, pairs_needed, sample_size_note

        baseline = baseline or self.paired_baseline
        first = self.curve_names(sweep)[0]
        common = set.intersection(*({r.index for r in results} for results in sweep.cells.values()))
        cells = {cell: sorted((r for r in results if r.index in common), key=lambda r: r.index)
                 for cell, results in sweep.cells.items()}
        if len(cells) == 1:
            results = next(iter(cells.values()))
            stacks = {name: [r.curves[name] for r in results] for name in self.curve_names(sweep)
                      if all(name in r.curves for r in results)}
        else:
            stacks = {cell: [r.curves[first] for r in results] for cell, results in cells.items()}
        if baseline not in stacks and stacks and len(cells) > 1:  # cells but no baseline: say why nothing is paired
            return {"note": f"note: no paired statistics against {baseline}: no {baseline} cell to pair the others "
                            f"with (add it to the cells)"}
        if baseline not in stacks or len(stacks) < 2:
            return {}
        if len(stacks[baseline]) == 1:  # the numbers are printed all the same: say what they cannot show
            return {"note": f"note: one run each: a difference between these numbers is one draw, which no test can "
                            f"tell from chance; {pairs_needed()} paired runs are the fewest that can show one at "
                            f"{ALPHA:g}"}
        if len(stacks[baseline]) < 2:
            return {}
        length = min(len(curve) for runs in stacks.values() for curve in runs)
        curves = {name: np.array([curve[:length] for curve in runs], dtype=np.float64) for name, runs in stacks.items()}
        if not all(np.isfinite(c).all() for c in curves.values()):
            return {"skipped": "a curve holds a non-finite value (a diverged run)"}
        final = {name: c[:, -1] for name, c in curves.items()}
        target = self.paired_target(curves[baseline])
        # steps: the run's own count where it records one against the curve (batches of a learner), else the index
        recorded = sweep.all_results[0].records.get("batches", {}).get(first)
        steps = np.asarray(recorded[:length]) if recorded is not None and len(recorded) >= length else np.arange(length)
        scalars = self.paired_scalars(cells, steps) if len(cells) > 1 else None
        start = float(curves[baseline][:, 0].mean())
        timed = {"curves": curves, "steps": steps, "target": target}
        target_note = None
        if (start >= target) if self.higher_is_better else (start <= target):
            # every run would "reach" the target at its first evaluation: a comparison of zeros (the default target,
            # 90 % of the baseline's improvement, lies behind its start when the baseline got worse)
            timed = {}
            target_note = (f"note: steps to target not compared: {baseline}'s runs start at {start:.4g} on average, "
                           f"which already reaches the target {target:.4g} (by default 90 % of {baseline}'s "
                           f"improvement, here none); a command's --target sets another")
        stats = paired_comparison(final, baseline=baseline, **timed, scalars=scalars,
                                  higher_is_better=self.higher_is_better,
                                  scalar_higher_is_better=self.scalar_directions(scalars), rng=0)
        entry = {"target": target, "statistics": statistics_to_json(stats), "lines": summary_lines(stats),
                 "note": sample_size_note(stats)}
        if target_note is not None:
            entry["target_note"] = target_note
        return entry

    def paired_target(self, baseline_curves: np.ndarray) -> float:
        """The value whose reaching is timed, from the baseline's ``(runs, points)`` curves; default
        :func:`improvement_target` (its start plus 90 % of its improvement)."""
        return improvement_target(baseline_curves)

    def paired_scalars(self, cells: dict, steps: np.ndarray) -> dict | None:
        """Further per-run values compared pair by pair, ``{name: {cell: (runs,)}}`` from the paired runs of each
        cell (in run order) at the evaluation ``steps``; default none."""
        return None

    def scalar_directions(self, scalars: dict | None) -> dict | None:
        """``{name: higher is better}`` for those of :meth:`paired_scalars` whose direction is not
        :attr:`higher_is_better`'s; default none."""
        return None

    # ------------------------------------------------------------ machinery
    def summary_rows(self, sweep) -> list:
        """The rows of ``summary.csv`` (see :func:`summarize`), cell by cell."""
        multi = len(sweep.cells) > 1
        rows = []
        for cell, results in sweep.cells.items():
            rows += summarize(results, self.curve_names(sweep), subsets=self.subsets(), label=self.label,
                              cell=cell if multi else None)
        return rows

    def write_summary(self, rows: list, path: Path) -> None:
        """Write ``summary.csv`` (default: :func:`write_summary` with :attr:`label`)."""
        write_summary(rows, path, label=self.label)

    def final(self, rows: list, sweep) -> dict:
        """``report.json``'s ``final``: per subset (and per cell with several cells) and curve, the last row's
        ``mean``, ``sem`` and ``n``."""
        final = {}
        multi = len(sweep.cells) > 1
        for cell, results in sweep.cells.items():
            last = {name: len(results[0].curves[name]) - 1 for name in self.curve_names(sweep)}
            target = final.setdefault(cell, {}) if multi else final
            for row in rows:
                if (not multi or row["cell"] == cell) and row["t"] == last[row[self.label]]:
                    target.setdefault(row["subset"], {})[row[self.label]] = {
                        "mean": row["mean"], "sem": row["sem"], "n": row["n"]
                    }
        return final

    def _final_by_cell(self, report: dict, sweep) -> dict:
        if len(sweep.cells) > 1:
            return report["final"]
        return {None: report["final"]}

    def _extras_mean(self, sweep) -> dict:
        results = sweep.all_results
        extras = {}
        for key in sorted({k for r in results for k in r.extras} - set(self.extras_not_averaged)):
            values = [r.extras[key] for r in results if isinstance(r.extras.get(key), (int, float))]
            if values:
                extras[key] = float(np.mean(values))
        return extras

    def write(self, sweep, out_dir: Path, *, figures: bool = True, command: Sequence[str] | None = None) -> dict:
        """Write ``summary.csv``, ``report.json`` and the figures into ``out_dir``; print the summary.

        ``report.json`` is strict JSON (a NaN, e.g. the SEM of a single run, is ``null``) and records the settings,
        the sweep's seed, the curteach version and, when given, the ``command`` line that made it.

        Returns:
            The report dict (also in ``report.json``).
        """
        out_dir = Path(out_dir)
        rows = self.summary_rows(sweep)
        self.write_summary(rows, out_dir / "summary.csv")
        extras = self._extras_mean(sweep)
        report = {
            "settings": self.experiment.settings(),
            "seed": sweep.seed,
            "curteach": library_version(),
            "command": None if command is None else list(command),
            "runs": len(next(iter(sweep.cells.values()))),
            "paired": self.paired(sweep),
            **({"paired_against": {baseline: self.paired(sweep, baseline) for baseline in self.more_baselines}}
               if self.more_baselines else {}),
            **self.report_data(sweep, rows),
            "final": self.final(rows, sweep),
            "extras_mean": extras,
            "files": ["summary.csv", "report.json"],
        }
        if len(self.experiment.cells) > 1:
            report["cells"] = list(sweep.cells)
        own = getattr(self.experiment, "cell_settings", None)
        if own is not None:  # the settings are those the cells share; each cell's own beside them
            report["cell_settings"] = {cell: own(cell) for cell in sweep.cells}
        report["files"] += self.tables(sweep, rows, out_dir, report)
        if figures:
            report["files"] += self.figures(sweep, rows, out_dir, extras)
        remove_stale_outputs(out_dir, report["files"])  # before report.json, which names the previous outputs
        strict = strict_json(report)
        atomic_write(out_dir / "report.json", lambda stream: json.dump(strict, stream, indent=1, allow_nan=False))
        self.print_runs(sweep, out_dir)
        self.print_summary(sweep, report, out_dir)
        self.print_paired(report)
        return report

    def print_paired(self, report: dict) -> None:
        """The paired statistics' lines and their note, against the baseline and then each of
        :attr:`more_baselines` (nothing without them)."""
        entries = [(self.paired_baseline, report.get("paired") or {})]
        entries += list((report.get("paired_against") or {}).items())
        legend = True
        for baseline, paired in entries:
            if paired.get("lines"):
                if legend:  # once: what every number of the lines below is
                    print("paired statistics, run i of a cell against run i of the other: mean difference [95 % "
                          "bootstrap interval] (Wilcoxon signed-rank p, pairs better, pairs tied); t-test detects ±d: "
                          "where p >= 0.05, the difference a paired t-test finds 4 times in 5 at this spread; IQM: "
                          "the interquartile mean of the final values; steps to target: the first evaluation step at "
                          "which a run reaches the target value")
                    legend = False
                timed = "" if "target_note" in paired else f" (target {paired['target']:.4g})"
                print(f"paired against {baseline}{timed}:")
                for line in paired["lines"]:
                    print(f"  {line}")
            for note in ("target_note", "note"):
                if paired.get(note):
                    print(paired[note])
