"""``dataset-bc``'s outputs: ``summary.csv``, ``report.json`` with the paired statistics, and the figures.

``summary.csv`` has one row per curriculum and evaluation point: ``curriculum, batches, mean, sem, n`` (the greedy
policy's mean test return over runs), then ``success_mean, success_sem`` and ``sampled_success_mean,
sampled_success_sem`` where success is defined (the environment reports it, or only terminal steps are rewarded)
and, with several datasets, ``success_mean:<dataset>`` per dataset.

When a cell selects or weights, or reads another task score than the sweep's, every row also says the cell's ``use``
and ``task`` (Agn: ``all``). ``selection.csv`` records what every run trained on, and ``report.json``'s
``selection_quality`` how much of the bad data (a boolean metadata field, ``bad_field``) each cell kept
(:mod:`~curteach_teaching.experiments.dataset_bc.selection_table`); ``further_selection_quality`` the same for
each further field of a comma-separated ``bad_field`` (``noisy,not:success``).

``report.json``'s ``paired`` holds, for every curriculum against Agn (:mod:`curteach_teaching.sweeps.paired`), the
per-pair difference of the final return (and success rate, and the success rate, or return, at every evaluation
point in between: ``success@500``) with a bootstrap interval, the Wilcoxon p-value, the
share of pairs where it is better, the IQMs, and the difference in optimizer steps to reach the target (``target``:
90 % of Agn's improvement unless given, :func:`~curteach_teaching.sweeps.reports.improvement_target`).

**Without an environment** (the experiment's ``holdout``) the main metric is ``metric``, a held-out score
(:mod:`~curteach_teaching.experiments.dataset_bc.held_out`): ``nll`` (default) or ``mse`` (``Box`` actions), lower is
better, or ``accuracy`` (discrete actions), higher is better; ``mean, sem`` are its, the other metrics (overall and per
group) are columns ``<metric>_mean[:<group>], <metric>_sem[:<group>]``; ``target`` is in its units. The paired
statistics then compare the final main metric, the other overall metric and, with several groups, the main metric per
group (each in its own direction), and the main metric at every point in between (``nll@500``). ``report.json`` says
which episodes were held out (``held_out``); ``selection.csv`` and the bad episodes cover the training part. Its
``metric`` names the main metric and its direction either way (``return``, higher, with an environment).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curteach_teaching.experiments.dataset_bc.held_out import METRICS
from curteach_teaching.experiments.dataset_bc.held_out import higher_is_better as metric_higher_is_better
from curteach_teaching.sweeps.reports import Report, improvement_target, mean_sem, stack_runs, write_summary

__all__ = ["DatasetBCReport"]


_METRIC_NAMES = {"nll": "held-out NLL per step", "mse": "held-out MSE of the greedy action",
                 "accuracy": "held-out accuracy of the greedy action"}


def _stack(results: list, curve: str, steps: str = "return") -> tuple[np.ndarray, np.ndarray]:
    """``(K,)`` batches and ``(R, K)`` values of ``curve`` over one cell's runs (:func:`stack_runs`; the batches
    recorded against ``steps``)."""
    return stack_runs(results, curve, steps)


def _curve(rows: list, cell: str, key: str) -> tuple:
    """``(batches (K,), mean (K,), sem (K,), n)`` of one summary column for one cell, as the figures take it:
    ``key`` is a mean column (``mean``, ``success_mean``, ``success_mean:<dataset>``), its SEM the same name with
    ``sem`` (the dataset's name, after the colon, left as it is)."""
    base, colon, group = key.partition(":")
    sem = base.replace("mean", "sem") + colon + group
    mine = [r for r in rows if r["curriculum"] == cell]
    return [r["batches"] for r in mine], [r[key] for r in mine], [r[sem] for r in mine], mine[0]["n"]


def _check_metric(metric: str, held_out: bool, action_space) -> None:
    """ValueError (one line) for a metric this report cannot give."""
    import gymnasium as gym

    if metric == "return":
        if held_out:
            raise ValueError("metric must be nll, mse (continuous actions) or accuracy (discrete) without an "
                             "environment: the held-out demonstrations give no return")
        return
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {('return', *METRICS)}; got {metric!r}")
    if not held_out:
        raise ValueError(f"metric must be return with an environment; {metric} scores held-out demonstrations "
                         "(--env none)")
    continuous = isinstance(action_space, gym.spaces.Box)
    if metric == "mse" and not continuous or metric == "accuracy" and continuous:
        raise ValueError(f"metric must be {'mse' if continuous else 'accuracy'} or nll for "
                         f"{'continuous' if continuous else 'discrete'} actions; got {metric}")


class DatasetBCReport(Report):
    """The report of ``dataset-bc`` (see the module docstring).

    Args:
        experiment: the :class:`~curteach_teaching.experiments.dataset_bc.experiment.DatasetBCExperiment`.
        pool: the :class:`~curteach_teaching.datasets.EpisodePool` it ran on (read once, by the caller), for
            ``selection.csv`` and the bad episodes.
        success: whether success is defined for the pool (and reported).
        target: the return to reach for steps-to-target, a finite number (``None``: 90 % of Agn's final mean).
        title: the figures' title prefix.
        bad_field: the boolean metadata field that marks bad episodes, True or False in every episode, or
            ``not:FIELD`` (bad where it is False), or several, comma-separated, each with its table (``None``:
            ``noisy``, as the BabyAI bot's datasets have it, where every episode has it as a boolean; else no table).
        metric: the main metric: ``return`` with an environment; without one (``experiment.holdout``) ``nll``
            (``None``: the default of either), ``mse`` or ``accuracy``.

    Raises:
        ValueError: a metric that the experiment or the action space does not give, a target that is not a finite
            number, or a ``bad_field`` that is not a boolean field of every episode
            (:func:`~curteach_teaching.datasets.labels.bad_episodes`); before any run.
    """

    label = "curriculum"
    metric_name = "test return"

    extras_not_averaged = ("selection",)

    def __init__(self, experiment, pool, *, success: bool, target: float | None = None, title: str = "",
                 bad_field: str | None = None, metric: str | None = None):
        from curteach_teaching.datasets.labels import DEFAULT_BAD_FIELD, bad_episodes

        if target is not None and (isinstance(target, bool) or not isinstance(target, (int, float))
                                   or not np.isfinite(target)):
            raise ValueError(f"target must be a finite number; got {target!r}")
        self.held_out = experiment.holdout is not None
        metric = metric or ("nll" if self.held_out else "return")
        _check_metric(metric, self.held_out, pool.action_space)
        super().__init__(experiment, curves=[metric], title=title)
        self.metric, self.steps_key = metric, "nll" if self.held_out else "return"
        self.higher_is_better = metric_higher_is_better(metric)
        if self.held_out:
            self.metric_name = _METRIC_NAMES[metric]
        self.full_pool = pool
        split = getattr(experiment.data, "split", None)
        self.pool = pool if split is None else pool.select(split.train)  # what the runs trained on
        self.success = success
        self.target = target
        # checked here, before any run (the training part); the first field's table is report.json's
        # selection_quality, the others' its further_selection_quality
        fields = [None] if bad_field is None else [f.strip() for f in str(bad_field).split(",") if f.strip()] or [""]
        self.bad_fields = [(field or DEFAULT_BAD_FIELD, bad_episodes(self.pool, field)) for field in fields]
        self.bad_field_given = bad_field is not None
        cells = [experiment.cell_spec(cell) for cell in experiment.cells]
        self.use_columns = any(c.use not in (None, "order") for c in cells) or len({c.task for c in cells} - {None}) > 1

    def tables(self, sweep, rows: list, out_dir: Path, report: dict) -> list:
        """``selection.csv`` (when the runs recorded their selections), ``report["selection_quality"]`` (the first
        bad field's) and ``report["further_selection_quality"]`` (a list, one per further field)."""
        from curteach_teaching.experiments.dataset_bc.selection_table import selection_quality, write_selection_csv

        pool = self.pool
        if not write_selection_csv(sweep, pool, out_dir / "selection.csv"):
            return []
        tables = [{"field": field, **selection_quality(sweep, pool, bad)} for field, bad in self.bad_fields
                  # a pool with no bad episode (a clean dataset's "noisy" field, all false) has nothing to say,
                  # unless the field was asked for
                  if bad is not None and (bad.any() or self.bad_field_given)]
        if tables:
            report["selection_quality"] = tables[0]
        if tables[1:]:
            report["further_selection_quality"] = tables[1:]
        return ["selection.csv"]

    def metrics(self, sweep) -> list[str]:
        """The curves summarised besides the main metric."""
        first = sweep.all_results[0].curves
        if self.held_out:
            return [name for name in first if name != self.metric and name != "train:loss"]
        if not self.success:
            return []
        return [name for name in first if name == "success" or name == "sampled_success"
                or name.startswith("success:") or name.startswith("sampled_success:")]

    def summary_rows(self, sweep) -> list:
        """One row per curriculum and evaluation point (see the module docstring)."""
        rows = []
        for cell, results in sweep.cells.items():
            batches, stack = _stack(results, self.metric, self.steps_key)
            mean, sem = mean_sem(stack)
            extra = {name: mean_sem(_stack(results, name, self.steps_key)[1]) for name in self.metrics(sweep)}
            spec = self.experiment.cell_spec(cell)
            labels = ({"use": spec.use if spec.task is not None else "all", "task": spec.task or ""}
                      if self.use_columns else {})
            for k, b in enumerate(batches):
                row = {"curriculum": cell, **labels, "batches": int(b), "mean": float(mean[k]), "sem": float(sem[k]),
                       "n": len(results)}
                for name, (m, s) in extra.items():
                    base, _, group = name.partition(":")
                    key = f"{base}_mean" + (f":{group}" if group else "")
                    row[key] = float(m[k])
                    row[key.replace("_mean", "_sem")] = float(s[k])
                rows.append(row)
        return rows

    def write_summary(self, rows: list, path: Path) -> None:
        """``summary.csv`` (see the module docstring; floats exact)."""
        write_summary(rows, path, columns=list(rows[0]) if rows else ["curriculum", "batches", "mean", "sem", "n"])

    def final(self, rows: list, sweep) -> dict:
        """Per curriculum: the last point's mean, SEM and n of the return (and success)."""
        final = {}
        for cell in sweep.cells:
            last = [r for r in rows if r["curriculum"] == cell][-1]
            final[cell] = {k: v for k, v in last.items() if k not in ("curriculum", "use", "task")}
        return final

    def paired_target(self, baseline_curves: np.ndarray) -> float:
        """``target`` when given, else Agn's start plus 90 % of its improvement."""
        return self.target if self.target is not None else improvement_target(baseline_curves)

    def paired_scalars(self, cells: dict, steps: np.ndarray) -> dict | None:
        """The final success rate (where defined), and the success rate (or return) at every evaluation point in
        between (``success@500``): a curriculum may lead early and not at the end."""
        length = len(steps)
        if self.held_out:
            return self._held_out_scalars(cells, steps)
        scalars = {}
        if self.success and all("success" in r.curves for results in cells.values() for r in results):
            scalars["success"] = {cell: np.array([r.curves["success"][length - 1] for r in results])
                                  for cell, results in cells.items()}
            # several datasets (tasks): each one's final success too, so that a curriculum's gain on one task is not
            # averaged away
            runs = [r for results in cells.values() for r in results]
            for name in [name for name in runs[0].curves if name.startswith("success:")]:
                if all(name in r.curves for r in runs):
                    scalars[name] = {cell: np.array([r.curves[name][length - 1] for r in results])
                                     for cell, results in cells.items()}
        metric = "success" if "success" in scalars else "return"
        for k in range(1, length - 1):
            scalars[f"{metric}@{int(steps[k])}"] = {cell: np.array([r.curves[metric][k] for r in results])
                                                    for cell, results in cells.items()}
        return scalars or None

    def _held_out_scalars(self, cells: dict, steps: np.ndarray) -> dict | None:
        """The final value of the other overall metric and of the main one per group, and the main metric at every
        point in between."""
        length = len(steps)
        runs = [r for results in cells.values() for r in results]
        names = [name for name in runs[0].curves if all(name in r.curves for r in runs)
                 and (name in METRICS and name != self.metric or name.startswith(f"{self.metric}:"))]
        scalars = {name: {cell: np.array([r.curves[name][length - 1] for r in results])
                          for cell, results in cells.items()} for name in names}
        for k in range(1, length - 1):
            scalars[f"{self.metric}@{int(steps[k])}"] = {cell: np.array([r.curves[self.metric][k] for r in results])
                                                         for cell, results in cells.items()}
        return scalars or None

    def scalar_directions(self, scalars: dict | None) -> dict | None:
        """Without an environment, each scalar in its metric's direction (NLL lower, accuracy higher)."""
        if not self.held_out or not scalars:
            return None
        return {name: metric_higher_is_better(name.partition("@")[0]) for name in scalars}

    def report_data(self, sweep, rows: list) -> dict:
        """The main metric, the per-epoch selected fractions (mean over runs), the diverged runs and, without an
        environment, the held-out episodes."""
        selected = {}
        for cell, results in sweep.cells.items():
            fractions = [r.extras.get("selected_fraction", []) for r in results]
            length = min(len(f) for f in fractions)
            selected[cell] = np.mean([f[:length] for f in fractions], axis=0).tolist() if length else []
        diverged = {cell: {str(r.index): r.extras["diverged"] for r in results if "diverged" in r.extras}
                    for cell, results in sweep.cells.items()}
        data = {"metric": {"name": self.metric, "higher_is_better": self.higher_is_better},
                "selected_fraction": selected,
                "diverged_runs": {cell: runs for cell, runs in diverged.items() if runs}}
        if self.held_out:
            data.update(self._held_out_data())
        return data

    def _held_out_data(self) -> dict:
        """``held_out``: the fraction, the field and the held-out episodes' ids per group."""
        experiment, pool = self.experiment, self.full_pool
        held = experiment.data.split.held_out.tolist()
        episodes: dict = {}
        for i in held:
            episodes.setdefault(pool.groups[i], []).append(int(pool.episode_ids[i]))
        return {"held_out": {"fraction": experiment.holdout, "field": experiment.holdout_field,
                             "episodes": len(held), "steps": int(sum(len(pool.trajectories[i].acts) for i in held)),
                             "training_episodes": len(self.pool), "ids": episodes}}

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """``test_return.png`` (and ``success.png``), or without an environment ``held_out_nll.png`` and
        ``held_out_mse.png`` (or ``held_out_accuracy.png``): every curriculum in one figure against optimizer
        steps."""
        from curteach_teaching.plots import plot_curves_against_batches

        names = []
        panels = (("mean", "test_return.png", "Mean test return (greedy)"),
                  ("success_mean", "success.png", "Success rate (greedy)"),
                  ("sampled_success_mean", "sampled_success.png", "Success rate (sampled actions)"))
        if self.held_out:
            panels = tuple((f"{name}_mean" if name != self.metric else "mean", f"held_out_{name}.png",
                            f"{_METRIC_NAMES[name][0].upper()}{_METRIC_NAMES[name][1:]} "
                            f"({'higher' if metric_higher_is_better(name) else 'lower'} is better)")
                           for name in METRICS)
        for key, file, ylabel in panels:
            if not rows or key not in rows[0]:
                continue
            curves = {cell: _curve(rows, cell, key) for cell in sweep.cells}
            plot_curves_against_batches(curves, out_dir / file, title=self.title, ylabel=ylabel)
            names.append(file)
        if not self.held_out and rows and any(key.startswith("success_mean:") for key in rows[0]):
            names.append(self._group_figure(sweep, rows, out_dir / "success_by_dataset.png"))
        return names

    def _group_figure(self, sweep, rows: list, path: Path) -> str:
        """``success_by_dataset.png``: the greedy success rate on each dataset of the pool (each task), a panel
        each, in the pool's order."""
        from curteach_teaching.experiments.dataset_bc.group_figure import plot_groups_against_batches

        panels = {group: {cell: _curve(rows, cell, f"success_mean:{group}") for cell in sweep.cells}
                  for group in self.pool.group_names}
        plot_groups_against_batches(panels, path, title=self.title, ylabel="Success rate (greedy)")
        return path.name

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """The final return (and success) per curriculum, the paired statistics and any diverged run."""
        held = report.get("held_out")
        if held:
            where = f" with {held['field']} true" if held["field"] else ""
            print(f"no environment: scored on {held['episodes']} held-out episodes{where} ({held['steps']} steps), "
                  f"trained on the other {held['training_episodes']} ({'higher' if self.higher_is_better else 'lower'}"
                  f" {self.metric} is better)")
        for cell, last in report["final"].items():
            if self.held_out:
                text = ", ".join(f"held-out {name} {last['mean' if name == self.metric else name + '_mean']:.4g}"
                                 for name in METRICS if name == self.metric or f"{name}_mean" in last)
                print(f"{cell} after {last['batches']} batches (n={last['n']}): {text}")
                continue
            text = f"return {last['mean']:.2f}"
            if "success_mean" in last:
                text += f", success {last['success_mean']:.2f}"
            if "sampled_success_mean" in last:
                text += f" (sampled {last['sampled_success_mean']:.2f})"
            print(f"{cell} after {last['batches']} batches (n={last['n']}): {text}")
        for cell, runs in report.get("diverged_runs", {}).items():
            where = ", ".join(f"run {index} at batch {step}" for index, step in runs.items())
            print(f"warning: the training loss of {cell} stopped being finite (training stopped): {where}")
        for quality in [report.get("selection_quality"), *report.get("further_selection_quality", [])]:
            if quality:
                self._print_quality(quality)

    def _print_quality(self, quality: dict) -> None:
        """The lines of one bad field's table (:meth:`tables`)."""
        print(f"bad episodes ({quality['field']}): {quality['bad_share']:.0%} of the pool")
        for cell, kept in quality["cells"].items():
            if "bad_weight_share" in kept:
                print(f"  {cell}: {kept['bad_weight_share']:.0%} of the loss weight on them "
                      f"({kept['bad_transition_share']:.0%} of the transitions)")
            elif kept["dropped"] > 0:
                # order drops most in its first epoch, and fewer after; select's last epoch is the one it ends on
                epoch = "last" if self.experiment.cell_spec(cell).use == "select" else "first"
                text = (f"  {cell}: {kept['dropped_bad_share']:.0%} of the {kept['dropped']:.0f} episodes it "
                        f"drops in its {epoch} epoch are bad; {kept['kept_bad_share']:.0%} of those it keeps")
                if "kept_bad_transition_share" in kept:  # not in the reports of the versions before it
                    text += f" ({kept['kept_bad_transition_share']:.0%} of their transitions)"
                print(text)
            else:  # said, so that the header never stands alone
                print(f"  {cell}: drops no episode (it trains on all of them, the bad ones included)")
