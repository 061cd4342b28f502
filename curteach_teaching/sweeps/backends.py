"""Execution backends of a sweep: where the (cell, run) units are computed.

A backend only *computes*: it calls :func:`compute_run` on each unit and hands the :class:`RunResult` back to the
driver (:func:`curteach_teaching.sweeps.sweep.run_sweep`), which checks it, writes its file and updates the
progress bar. No backend writes a file or assumes that the workers share the driver's disk, so a distributed backend
fits the same interface.

* :class:`SerialBackend`: in this process, one unit after the other.
* :class:`ProcessBackend`: a pool of ``spawn``-ed processes, one math thread each (the default).
* :class:`~curteach_teaching.sweeps.ray_backend.RayBackend` (its own module): one Ray task per unit on a Ray
  cluster (or a local Ray instance).

To add a backend, subclass :class:`Backend` and implement :meth:`Backend.run_units`, then list it in
:data:`~curteach_teaching.sweeps.sweep.BACKENDS` (see :func:`~curteach_teaching.sweeps.sweep.make_backend`).
A backend that loses a run with its worker (after its own retries) raises :class:`LostRun`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.registry import PluginError
from curteach_teaching.sweeps.process_pool import WorkerPool
from curteach_teaching.sweeps.results import RunResult

__all__ = [
    "Backend",
    "LostRun",
    "ProcessBackend",
    "SerialBackend",
    "Unit",
    "WorkerContext",
    "capped_workers",
    "code_fingerprint",
    "compute_run",
    "fit_threads",
    "one_math_thread",
    "enter_worker",
    "run_seed_sequence",
    "worker_context",
]


@dataclass(frozen=True)
class WorkerContext:
    """Where the calling code runs, as set by the backend that started it.

    Attributes:
        index: 0 on the driver and the serial backend; ``1 .. N`` in the N workers of a process pool (e.g. the
            line of a run's progress bar).
        in_worker: ``True`` inside a pool worker or a Ray task.
    """

    index: int
    in_worker: bool


_DRIVER = WorkerContext(index=0, in_worker=False)
_context = _DRIVER


def worker_context() -> WorkerContext:
    """The :class:`WorkerContext` of the calling process (the driver's, unless a backend set another)."""
    return _context


def enter_worker(index: int) -> None:
    """For backends, first thing in a worker: set its :class:`WorkerContext` (``index``: see there) and give it one
    math thread (:func:`worker_context` then tells experiments where they run)."""
    global _context
    _context = WorkerContext(index=index, in_worker=True)
    _single_threaded_worker()


def run_seed_sequence(seed: int, index: int) -> np.random.SeedSequence:
    """The seed sequence of run ``index`` of a sweep seeded with ``seed``, shared by every cell (paired runs)."""
    return np.random.SeedSequence([int(seed), int(index)])


@dataclass(frozen=True)
class Unit:
    """One unit of work: run ``index`` of ``cell``, seeded by the sweep's ``seed``."""

    cell: str
    index: int
    seed: int


_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def one_math_thread() -> Iterator[None]:
    """Run the body with one torch math thread, restoring the previous count after: every run then computes its
    float sums the same way on every backend and worker count (runs run side by side instead), and a loaded machine
    is not oversubscribed. Without torch loaded, torch is not imported for it: the body sees ``OMP_NUM_THREADS`` and
    ``MKL_NUM_THREADS`` at 1 (restored after), so a torch first imported by the run starts, and stays, at one
    thread."""
    torch = sys.modules.get("torch")
    if torch is not None:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)
        return
    saved = {name: os.environ.get(name) for name in _THREAD_VARIABLES}
    os.environ.update(dict.fromkeys(_THREAD_VARIABLES, "1"))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def fit_threads() -> Iterator[int]:
    """Run a driver's fit (``rank``'s scores, ``dataset-bc``'s trained scores) with the math threads the user asked
    for in ``OMP_NUM_THREADS``, else one (issue 52: torch's default of one thread per core made a 5-member ensemble
    ~10x slower on a 2-core machine with anything else running, for networks whose work is microseconds a step);
    restored after. Yields the count."""
    import torch

    wanted = os.environ.get("OMP_NUM_THREADS", "").strip()
    count = int(wanted) if wanted.isdigit() and int(wanted) > 0 else 1
    threads = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield count
    finally:
        torch.set_num_threads(threads)


def compute_run(experiment, unit: Unit) -> RunResult:
    """Worker side of every backend: compute one unit at one math thread (:func:`one_math_thread`) and return its
    result (nothing is written here)."""
    with one_math_thread():
        result = experiment.run_cell(unit.cell, unit.index, run_seed_sequence(unit.seed, unit.index))
    if not isinstance(result, RunResult):
        raise TypeError(f"{type(experiment).__name__}.run_cell returned {type(result).__name__}, not RunResult")
    return replace(result, cell=unit.cell, index=unit.index, seed=unit.seed)


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
        """Compute the units one after the other in this process."""
        for unit in units:
            yield unit, _labelled(compute_run, experiment, unit)


def _labelled(function, experiment, unit: Unit) -> RunResult:
    try:
        return function(experiment, unit)
    except Exception as error:
        if not isinstance(error, PluginError):  # a plug-in's error is one line and a log file (sweep.py)
            print(f"run {unit.index} of cell {unit.cell!r} failed:", file=sys.stderr)
        raise


def _single_threaded_worker() -> None:
    """Give each worker process one math thread: the runs already fill the cores, and oversubscribed torch/BLAS
    thread pools made a BC run ~15x slower on a loaded 2-core machine. A value the user set is kept."""
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


class LostRun(RuntimeError):
    """A run whose worker died (a killed process, a lost node) more often than the backend retries it.

    Attributes:
        unit: the run.
        attempts: how many times it was started (``None``: not known, e.g. its node died under it).
        cause: what ended its last worker, in words.
        saved: what the sweep kept, in words (added by the sweep driver: ``"N of M runs saved in DIR; ..."``).
    """

    def __init__(self, unit: Unit, attempts: int | None, cause: str, saved: str = ""):
        tries = {None: "", 1: " after its only attempt"}.get(attempts, f" after {attempts} attempts")
        message = f"run {unit.index} of cell {unit.cell!r} was lost{tries}: {cause}"
        super().__init__(f"{message}; {saved}" if saved else message)
        self.unit = unit
        self.attempts = attempts
        self.cause = cause
        self.saved = saved


def _exit_cause(exit_code: int) -> str:
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return f"its worker process was killed by {name}"
    return f"its worker process exited with code {exit_code} without an answer"


def capped_workers(workers: int | None, units: int | None = None) -> int:
    """``workers`` (default: the CPU count) at most the CPU count, with a note on stderr when it is lowered, and at
    most ``units`` (more processes than runs would only start and wait)."""
    cpus = os.cpu_count() or 1
    if workers is None:
        workers = cpus
    elif workers > cpus:
        print(f"note: {workers} workers asked for, {cpus} CPUs here; using {cpus}", file=sys.stderr)
        workers = cpus
    return max(1, min(workers, units)) if units is not None else workers


class ProcessBackend(Backend):
    """A pool of ``workers`` spawned processes (default: the CPU count), one math thread each.

    With a single unit or ``workers == 1`` the units run in this process instead (as :class:`SerialBackend`): a pool
    would only add start-up time, and the results are the same. A worker that dies while computing a run (``kill
    -9``, the out-of-memory killer) is replaced and the run started again, up to ``max_retries`` times, with the
    same seed (so with the same result); a run lost that often is given up, the other runs go on and are saved, and
    :class:`LostRun` is raised once they are done. When the driver stops early (Ctrl-C, a failed run), the workers
    are stopped at once: queued units are dropped and the runs in flight are lost, never half-written. Workers end
    with the driver even when it is killed.
    """

    name = "processes"
    #: how often the driver wakes up while waiting for results (seconds); keeps Ctrl-C prompt
    poll_interval = 0.2

    def __init__(self, workers: int | None = None, max_retries: int = 3):
        if workers is not None:
            check_int("workers", workers, 1)
        check_int("max_retries", max_retries, 0)
        self.workers = workers
        self.max_retries = max_retries

    def run_units(self, experiment, units):
        """Compute the units in the pool (or in this process for one unit or one worker)."""
        units = list(units)
        n_workers = capped_workers(self.workers, len(units)) if units else 1
        if n_workers <= 1:
            yield from SerialBackend().run_units(experiment, units)
            return
        pool = WorkerPool(n_workers, functools.partial(compute_run, experiment), initializer=enter_worker)
        attempts = dict.fromkeys(units, 1)
        lost = None
        try:
            for unit in units:
                pool.submit(unit)
            for event in pool.events(self.poll_interval):
                unit = event.task
                if event.died:
                    cause = _exit_cause(event.exit_code)
                    if attempts[unit] > self.max_retries:
                        # the other runs go on and are saved: a lost run loses nothing but itself
                        lost = lost or LostRun(unit, attempts[unit], cause)
                        continue
                    attempts[unit] += 1
                    print(f"run {unit.index} of cell {unit.cell!r}: {cause}; starting it again (attempt "
                          f"{attempts[unit]} of {self.max_retries + 1})", file=sys.stderr)
                    pool.retry(unit)
                    continue
                if event.error is not None:
                    if not isinstance(event.error, PluginError):
                        print(f"run {unit.index} of cell {unit.cell!r} failed:", file=sys.stderr)
                    raise event.error
                yield unit, event.result
            if lost is not None:
                raise lost
        finally:
            pool.close()


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """``"VERSION+HASH"``: the installed curteach version and a hash of its Python sources (both packages).

    A worker whose fingerprint differs from the driver's runs other code, so its numbers could differ silently.
    """
    try:
        version = importlib.metadata.version("curteach")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]
    for package in ("curteach_envs", "curteach_teaching"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return f"{version}+{digest.hexdigest()[:12]}"
