"""Execution backends of a sweep: where the (cell, run) units are computed.

A backend only *computes*: it calls :func:`compute_run` on each unit and hands the :class:`RunResult` back to the
driver (:func:`curteach_teaching.experiments.sweep.run_sweep`), which checks it, writes its file and updates the
progress bar. No backend writes a file or assumes that the workers share the driver's disk, so a distributed backend
fits the same interface.

* :class:`SerialBackend`: in this process, one unit after the other.
* :class:`ProcessBackend`: a pool of ``spawn``-ed processes, one math thread each (today's default).

To add a backend, subclass :class:`Backend` and implement :meth:`Backend.run_units`, then list it in
:data:`BACKENDS` (see :func:`make_backend`).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from abc import ABC, abstractmethod
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.experiments.results import RunResult

__all__ = [
    "BACKENDS",
    "Backend",
    "ProcessBackend",
    "SerialBackend",
    "Unit",
    "compute_run",
    "make_backend",
    "run_seed_sequence",
]


def run_seed_sequence(seed: int, index: int) -> np.random.SeedSequence:
    """The seed sequence of run ``index`` of a sweep seeded with ``seed``, shared by every cell (paired runs)."""
    return np.random.SeedSequence([int(seed), int(index)])


@dataclass(frozen=True)
class Unit:
    """One unit of work: run ``index`` of ``cell``, seeded by the sweep's ``seed``."""

    cell: str
    index: int
    seed: int


def compute_run(experiment, unit: Unit) -> RunResult:
    """Worker side of every backend: compute one unit and return its result (nothing is written here)."""
    result = experiment.run_cell(unit.cell, unit.index, run_seed_sequence(unit.seed, unit.index))
    if not isinstance(result, RunResult):
        raise TypeError(f"{type(experiment).__name__}.run_cell returned {type(result).__name__}, not RunResult")
    result.cell = unit.cell
    result.index = unit.index
    result.seed = unit.seed
    return result


class Backend(ABC):
    """Computes units and yields ``(unit, result)`` pairs as they finish, in any order."""

    #: the name used by ``--backend``
    name: str = ""

    @abstractmethod
    def run_units(self, experiment, units: Sequence[Unit]) -> Iterator[tuple[Unit, RunResult]]:
        """Compute every unit; yield each ``(unit, result)`` as soon as it is done.

        If a unit raises, the exception propagates out of the iterator (after queued units are cancelled), and the
        pairs already yielded stay with the driver.
        """


class SerialBackend(Backend):
    """Every unit in this process, in order."""

    name = "serial"

    def run_units(self, experiment, units):
        for unit in units:
            yield unit, _labelled(compute_run, experiment, unit)


def _labelled(function, experiment, unit: Unit) -> RunResult:
    try:
        return function(experiment, unit)
    except Exception:
        print(f"run {unit.index} of cell {unit.cell!r} failed:", file=sys.stderr)
        raise


def _single_threaded_worker() -> None:
    """Give each worker process one math thread: the runs already fill the cores, and oversubscribed torch/BLAS
    thread pools made a BC run ~15x slower on a loaded 2-core machine. A value the user set is kept."""
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


class ProcessBackend(Backend):
    """A pool of ``workers`` spawned processes (default: the CPU count), one math thread each.

    With a single unit or ``workers == 1`` the units run in this process instead (as :class:`SerialBackend`): a pool
    would only add start-up time, and the results are the same.
    """

    name = "processes"

    def __init__(self, workers: Optional[int] = None):
        if workers is not None:
            check_int("workers", workers, 1)
        self.workers = workers

    def run_units(self, experiment, units):
        units = list(units)
        n_workers = min(len(units), self.workers or os.cpu_count() or 1)
        if n_workers <= 1:
            yield from SerialBackend().run_units(experiment, units)
            return
        # spawn: no inherited locks or threads; run seeds do not depend on the process that runs them
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=n_workers, mp_context=context, initializer=_single_threaded_worker)
        try:
            pending = {pool.submit(compute_run, experiment, unit): unit for unit in units}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    unit = pending.pop(future)
                    try:
                        result = future.result()
                    except Exception:
                        print(f"run {unit.index} of cell {unit.cell!r} failed:", file=sys.stderr)
                        raise
                    yield unit, result
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


#: ``--backend`` names -> classes.
BACKENDS = {"serial": SerialBackend, "processes": ProcessBackend}


def make_backend(name: str = "processes", workers: Optional[int] = None) -> Backend:
    """The backend called ``name`` (``"serial"`` or ``"processes"``), sized by ``workers`` where that applies."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}; got {name!r}")
    if workers is not None:
        check_int("workers", workers, 1)
    if name == "serial":
        return SerialBackend()
    return ProcessBackend(workers)
