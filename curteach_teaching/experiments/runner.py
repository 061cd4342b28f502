"""A generic runner for teaching experiments: seeded runs in parallel processes, atomic per-run files, resume.

An *experiment* is any picklable object with

* ``teachers``: the teacher names (tuple of str), in the order of play;
* ``settings() -> dict``: its JSON-serialisable settings (hashed into each run file, so files written for other
  settings are never reused);
* ``run(index, seed_sequence) -> RunResult``: one run, drawing all randomness from ``seed_sequence``.

Run ``i`` of a sweep with ``seed`` gets ``np.random.SeedSequence([seed, i])``: its results do not depend on the number
of workers, on the order in which runs finish, or on which runs were resumed from disk.
:func:`run_sweep` skips runs whose file in ``DIR/runs/`` is valid, recomputes missing, corrupt or stale ones (saying
why), and each worker writes its run file atomically as soon as the run is done. :func:`write_outputs` then writes
``DIR/summary.csv``, ``DIR/report.json`` and the figures.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from curteach_envs.validation import check_int
from curteach_teaching.experiments.results import (
    RunResult,
    atomic_write,
    fingerprint,
    flagged_fraction,
    load_run,
    run_path,
    save_run,
    summarize,
    write_summary,
)

__all__ = ["SweepResult", "run_seed_sequence", "run_sweep", "write_outputs", "check_sweep_arguments"]


def run_seed_sequence(seed: int, index: int) -> np.random.SeedSequence:
    """The seed sequence of run ``index`` of a sweep seeded with ``seed``."""
    return np.random.SeedSequence([int(seed), int(index)])


@dataclass
class SweepResult:
    """Outcome of :func:`run_sweep`.

    Attributes:
        results: one :class:`RunResult` per run, by index.
        computed: indices computed in this call.
        reused: indices loaded from valid run files.
        invalid: index -> why an existing file was not used (corrupt or stale); those runs were recomputed.
    """

    results: list
    computed: list = field(default_factory=list)
    reused: list = field(default_factory=list)
    invalid: dict = field(default_factory=dict)


def _execute(experiment, out_dir: str, index: int, seed: int, settings_fingerprint: str) -> RunResult:
    """Worker: one run, written atomically to its file before returning."""
    result = experiment.run(index, run_seed_sequence(seed, index))
    result.seed = int(seed)
    save_run(run_path(Path(out_dir), index), result, settings_fingerprint)
    return result


def check_sweep_arguments(runs: int, seed: int, workers: Optional[int]) -> None:
    """``ValueError`` for a bad run count, seed or worker count."""
    check_int("runs", runs, 1)
    check_int("seed", seed, 0)
    if workers is not None:
        check_int("workers", workers, 1)


def run_sweep(
    experiment,
    out_dir: Path,
    runs: int,
    seed: int = 0,
    workers: Optional[int] = None,
    progress: bool = True,
) -> SweepResult:
    """Run (or resume) ``runs`` seeded runs of ``experiment``, writing ``out_dir/runs/run_XXXXX.json``.

    Args:
        experiment: see the module docstring.
        out_dir: output folder.
        runs: number of runs (indices ``0 .. runs - 1``).
        seed: the sweep's seed.
        workers: parallel processes (default: ``min(runs to do, CPU count)``); 1 runs in this process.
        progress: show a progress bar (tqdm, on stderr).

    Returns:
        A :class:`SweepResult`.
    """
    check_sweep_arguments(runs, seed, workers)
    out_dir = Path(out_dir)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    settings_fingerprint = fingerprint(experiment.settings())
    for stale in (out_dir / "runs").glob(".run_*.tmp"):  # leftovers of an interrupted write
        stale.unlink(missing_ok=True)

    sweep = SweepResult(results=[None] * runs)
    todo = []
    for index in range(runs):
        result, reason = load_run(run_path(out_dir, index), settings_fingerprint, index)
        if result is not None and result.seed == seed:
            sweep.results[index] = result
            sweep.reused.append(index)
            continue
        if result is not None:
            reason = f"written with seed {result.seed}"
        if reason != "missing":
            sweep.invalid[index] = reason
            print(f"run {index}: existing file not used ({reason}); recomputing", file=sys.stderr)
        todo.append(index)

    from tqdm import tqdm

    bar = tqdm(total=runs, initial=len(sweep.reused), desc="runs", unit="run", disable=not progress, file=sys.stderr)
    n_workers = min(len(todo), workers or os.cpu_count() or 1)
    try:
        if n_workers <= 1:
            for index in todo:
                sweep.results[index] = _execute(experiment, str(out_dir), index, seed, settings_fingerprint)
                sweep.computed.append(index)
                bar.update()
        elif todo:
            # spawn: no inherited locks or threads; run seeds do not depend on the process that runs them
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(
                max_workers=n_workers, mp_context=context, initializer=_single_threaded_worker
            ) as pool:
                futures = {
                    pool.submit(_execute, experiment, str(out_dir), index, seed, settings_fingerprint): index
                    for index in todo
                }
                for future in as_completed(futures):
                    index = futures[future]
                    sweep.results[index] = future.result()
                    sweep.computed.append(index)
                    bar.update()
    finally:
        bar.close()
    sweep.computed.sort()
    return sweep


def _single_threaded_worker() -> None:
    """Give each worker process one math thread: the runs already fill the cores, and oversubscribed torch/BLAS
    thread pools made a BC run ~15x slower on a loaded 2-core machine. A value the user set is kept."""
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def write_outputs(
    experiment,
    sweep: SweepResult,
    out_dir: Path,
    heatmap_teacher: Optional[str] = None,
    figures: bool = True,
    title: str = "",
) -> dict:
    """Write ``summary.csv``, ``report.json`` and the figures; print the flagged fraction and the final means.

    Returns:
        The report dict (also in ``report.json``): runs, flagged runs and fraction, final means per subset, files.
    """
    out_dir = Path(out_dir)
    results = sweep.results
    teachers = list(experiment.teachers)
    rows = summarize(results, teachers)
    write_summary(rows, out_dir / "summary.csv")
    flagged = {r.index: r.crash_step for r in results if not r.finished}
    final = {}
    for row in rows:
        if row["t"] == len(results[0].curves[teachers[0]]) - 1:
            final.setdefault(row["subset"], {})[row["teacher"]] = {"mean": row["mean"], "sem": row["sem"], "n": row["n"]}
    extras = {}
    for key in sorted({k for r in results for k in r.extras}):
        values = [r.extras[key] for r in results if isinstance(r.extras.get(key), (int, float))]
        if values:
            extras[key] = float(np.mean(values))
    report = {
        "settings": experiment.settings(),
        "runs": len(results),
        "flagged_runs": {str(k): v for k, v in sorted(flagged.items())},
        "flagged_fraction": flagged_fraction(results),
        "final": final,
        "extras_mean": extras,
        "files": ["summary.csv", "report.json"],
    }
    if figures:
        from curteach_teaching.plots import plot_curriculum_heatmap, plot_learning_curves

        for subset in ("all", "finished"):
            subset_rows = [r for r in rows if r["subset"] == subset]
            if not subset_rows or subset_rows[0]["n"] == 0:
                continue
            name = f"learning_curves_{subset}.png"
            plot_learning_curves(
                subset_rows, out_dir / name, teachers=teachers, reference=extras.get("expert_reward"),
                title=f"{title} ({subset} runs, n = {subset_rows[0]['n']})".strip(),
            )
            report["files"].append(name)
        chosen = heatmap_teacher or teachers[0]
        if chosen not in teachers:
            raise ValueError(f"heat-map teacher must be one of {teachers}; got {chosen!r}")
        finished_runs = [r for r in results if r.finished]
        for subset, subset_runs in (("all", results), ("finished", finished_runs)):
            if not subset_runs:
                continue
            name = f"curriculum_{chosen.replace(' ', '_')}_{subset}.png"
            plot_curriculum_heatmap(
                np.array([r.pick_types[chosen] for r in subset_runs]), out_dir / name,
                title=f"{chosen}: task type picked, fraction of {len(subset_runs)} {subset} runs",
            )
            report["files"].append(name)
    atomic_write(out_dir / "report.json", lambda stream: json.dump(report, stream, indent=1))
    print(f"{len(results)} runs ({len(sweep.computed)} computed, {len(sweep.reused)} reused) in {out_dir}")
    unchecked = sum(r.extras.get("crash_checked") is False for r in results)
    if unchecked:
        print(f"note: the crash flag was not checked in {unchecked} run(s) (no Cur teacher); they count as finished")
    print(
        f"flagged (the original would have crashed): {len(flagged)}/{len(results)} = "
        f"{report['flagged_fraction']:.2f}"
        + (f"  at steps {sorted(flagged.values())}" if flagged else "")
    )
    for subset in ("all", "finished"):
        if subset not in final:
            continue
        entries = sorted(final[subset].items(), key=lambda item: -np.nan_to_num(item[1]["mean"], nan=-np.inf))
        n = next(iter(final[subset].values()))["n"]
        text = ", ".join(f"{name} {v['mean']:.3f}" for name, v in entries)
        print(f"final expected reward, {subset} (n={n}): {text}")
    return report
