"""The layout of a car run (``car-irl``, ``car-irl-observability``, ``car-bc`` and their sensitivity sweeps).

A car run is a :class:`~curteach_teaching.sweeps.results.RunResult` of the cell ``"main"`` with

* ``curves[teacher]``: ``(T + 1,)`` expected reward after ``0..T`` teaching steps;
* ``records["picks"][teacher]``, ``records["pick_types"][teacher]``: ``(T,)`` the start state picked at each step
  and its task type;
* ``extras["crash_step"]``: the step at which the original code would have stopped (``None``: it would finish), and
  the experiment's scalar extras (the expert's reward, ...);
* ``extras["diverged"]`` (only when some learner diverged): teacher -> the step at which its learner diverged; it
  keeps its last finite parameters from then on (:mod:`curteach_teaching.learners.divergence`).

This module builds such a run and reads it back; what the reports make of many runs is in
:mod:`curteach_teaching.experiments.car.report`.
"""

from __future__ import annotations

from curteach_teaching.sweeps.results import RunResult

__all__ = ["car_run_result", "crash_step", "diverged_steps", "finished"]


def car_run_result(
    *,
    index: int,
    curves: dict,
    picks: dict,
    pick_types: dict,
    crash_step: int | None,
    extras: dict,
    diverged: dict | None = None,
) -> RunResult:
    """A car run's result (see the module docstring for the layout).

    Args:
        index: the run index.
        curves: teacher -> ``(T + 1,)`` expected reward.
        picks, pick_types: teacher -> ``(T,)`` start states picked and their task types.
        crash_step: the step at which the original code would have stopped, or ``None``.
        extras: the experiment's scalar extras (``crash_step`` and ``diverged`` are added here).
        diverged: teacher -> the step at which its learner diverged (only teachers whose learner did).
    """
    extras = {**extras, "crash_step": None if crash_step is None else int(crash_step)}
    if diverged:  # absent when nothing diverged, so such runs keep the layout they always had
        extras["diverged"] = {name: int(t) for name, t in diverged.items()}
    return RunResult(
        index=index,
        seed=0,
        curves=curves,
        records={"picks": picks, "pick_types": pick_types},
        extras=extras,
    )


def crash_step(result: RunResult) -> int | None:
    """The step at which the original code would have stopped, or ``None``."""
    return result.extras.get("crash_step")


def finished(result: RunResult) -> bool:
    """Whether the original code would have completed this run."""
    return crash_step(result) is None


def diverged_steps(result: RunResult) -> dict:
    """Teacher -> the step at which its learner diverged, for the teachers whose learner did (empty for most runs)."""
    return dict(result.extras.get("diverged") or {})
