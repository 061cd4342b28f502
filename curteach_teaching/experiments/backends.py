"""Execution backends of a sweep: where the (cell, run) units are computed.

A backend only *computes*: it calls :func:`compute_run` on each unit and hands the :class:`RunResult` back to the
driver (:func:`curteach_teaching.experiments.sweep.run_sweep`), which checks it, writes its file and updates the
progress bar. No backend writes a file or assumes that the workers share the driver's disk, so a distributed backend
fits the same interface.

* :class:`SerialBackend`: in this process, one unit after the other.
* :class:`ProcessBackend`: a pool of ``spawn``-ed processes, one math thread each (the default).
* :class:`RayBackend`: one Ray task per unit on a Ray cluster (or a local Ray instance); install with
  ``pip install "curteach[ray]"``. Ray is imported only when this backend runs.

To add a backend, subclass :class:`Backend` and implement :meth:`Backend.run_units`, then list it in
:data:`BACKENDS` (see :func:`make_backend`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import multiprocessing
import os
import queue
import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.experiments.results import RunResult

__all__ = [
    "BACKENDS",
    "Backend",
    "ProcessBackend",
    "RayBackend",
    "SerialBackend",
    "Unit",
    "WorkerContext",
    "code_fingerprint",
    "compute_run",
    "make_backend",
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


def _enter_worker(index: int) -> None:
    global _context
    _context = WorkerContext(index=index, in_worker=True)


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
        """Compute the units one after the other in this process."""
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


def _pool_worker() -> None:
    """Pool workers ignore Ctrl-C: the terminal sends SIGINT to the whole process group, and the driver, not each
    worker, decides what stops (it terminates the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the pool names its k-th worker "...PoolWorker-k"
    suffix = multiprocessing.current_process().name.rsplit("-", 1)[-1]
    _enter_worker(int(suffix) if suffix.isdigit() else 1)
    _single_threaded_worker()


class ProcessBackend(Backend):
    """A pool of ``workers`` spawned processes (default: the CPU count), one math thread each.

    With a single unit or ``workers == 1`` the units run in this process instead (as :class:`SerialBackend`): a pool
    would only add start-up time, and the results are the same. When the driver stops early (Ctrl-C, a failed run),
    the pool is terminated at once: queued units are dropped and the runs in flight are lost, never half-written.
    """

    name = "processes"
    #: how often the driver wakes up while waiting for results (seconds); keeps Ctrl-C prompt
    poll_interval = 0.2

    def __init__(self, workers: int | None = None):
        if workers is not None:
            check_int("workers", workers, 1)
        self.workers = workers

    def run_units(self, experiment, units):
        """Compute the units in the pool (or in this process for one unit or one worker)."""
        units = list(units)
        n_workers = min(len(units), self.workers or os.cpu_count() or 1)
        if n_workers <= 1:
            yield from SerialBackend().run_units(experiment, units)
            return
        # spawn: no inherited locks or threads; run seeds do not depend on the process that runs them
        context = multiprocessing.get_context("spawn")
        pool = context.Pool(n_workers, initializer=_pool_worker)
        arrived: queue.SimpleQueue = queue.SimpleQueue()
        try:
            for unit in units:
                pool.apply_async(
                    compute_run, (experiment, unit),
                    callback=lambda result, unit=unit: arrived.put((unit, result, None)),
                    error_callback=lambda error, unit=unit: arrived.put((unit, None, error)),
                )
            for _ in units:
                while True:
                    try:
                        unit, result, error = arrived.get(timeout=self.poll_interval)
                        break
                    except queue.Empty:
                        continue
                if error is not None:
                    print(f"run {unit.index} of cell {unit.cell!r} failed:", file=sys.stderr)
                    raise error
                yield unit, result
            pool.close()
        finally:
            pool.terminate()
            pool.join()


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


def _ray_compute(experiment, unit: Unit, driver_fingerprint: str) -> RunResult:
    """The Ray task: check that this worker runs the driver's code, then compute one unit."""
    # The terminal's Ctrl-C reaches every process of its group, local Ray workers included: the driver, not each
    # task, decides what stops (it cancels the tasks), as with the process pool's workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _enter_worker(0)
    mine = code_fingerprint()
    if mine != driver_fingerprint:
        raise RuntimeError(
            f"curteach on this Ray worker ({mine}, pid {os.getpid()}) differs from the driver's "
            f"({driver_fingerprint}); install the same version on every node"
        )
    _single_threaded_worker()
    return compute_run(experiment, unit)


def check_ray_address(address: str, timeout: float = 5.0) -> None:
    """Raise a ``ValueError`` at once if ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) accepts no TCP
    connection within ``timeout`` seconds; Ray itself retries an unreachable address for minutes. Addresses
    without a port (``auto``, ``local``) are left to Ray."""
    import socket

    host, separator, port = address.removeprefix("ray://").rpartition(":")
    if not separator or not port.isdigit():
        return
    host = host.strip("[]")  # an IPv6 literal
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as error:
        raise ValueError(
            f"no Ray cluster answers at {address!r} ({error.strerror or error}); start one with "
            f"'ray start --head' or check --ray-address / RAY_ADDRESS"
        ) from None


class RayBackend(Backend):
    """One Ray task per unit (``num_cpus=1``, ``num_gpus=gpus_per_run``).

    Workers compute and return the result; the driver writes every file, so worker nodes need no shared disk. A
    task whose worker dies (a killed process, a lost node) is retried by Ray up to ``max_retries`` times; a run
    that raises a Python error is not retried: the sweep fails with that error and the run's index. Each task first
    checks that its worker runs the driver's curteach (:func:`code_fingerprint`).

    Args:
        address: the cluster to join (default: the ``RAY_ADDRESS`` environment variable; if neither is set, a
            local Ray instance with ``workers`` CPUs is started for the sweep and shut down after it). If Ray is
            already initialised in this process, that instance is used.
        workers: CPUs of a local instance (default: the CPU count).
        gpus_per_run: the GPU fraction each run declares (default 0).
        max_retries: retries of a task whose worker died (default 3).
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        gpus_per_run: float = 0.0,
        max_retries: int = 3,
    ):
        if workers is not None:
            check_int("workers", workers, 1)
        check_int("max_retries", max_retries, 0)
        if not (isinstance(gpus_per_run, (int, float)) and np.isfinite(gpus_per_run) and gpus_per_run >= 0):
            raise ValueError(f"gpus_per_run must be a finite number >= 0; got {gpus_per_run!r}")
        self.address = address
        self.workers = workers
        self.gpus_per_run = float(gpus_per_run)
        self.max_retries = max_retries

    def _connect(self, ray) -> bool:
        """Initialise Ray if needed; return whether this call started it (and so must shut it down)."""
        if ray.is_initialized():
            return False
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        options = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address:
            check_ray_address(address)
            try:
                ray.init(address=address, **options)
            except ConnectionError as error:
                raise ValueError(f"cannot join the Ray cluster at {address!r}: {error}") from error
        else:
            ray.init(num_cpus=self.workers or os.cpu_count() or 1, **options)
        return True

    def run_units(self, experiment, units):
        """Submit one Ray task per unit and yield results as they arrive; cancel what is left on exit."""
        try:
            import ray
        except ImportError as error:
            raise ValueError('the ray backend needs Ray: pip install "curteach[ray]"') from error
        units = list(units)
        started = self._connect(ray)
        pending = {}
        try:
            task = ray.remote(_ray_compute).options(
                num_cpus=1, num_gpus=self.gpus_per_run, max_retries=self.max_retries, retry_exceptions=False
            )
            shared = ray.put(experiment)
            fingerprint = code_fingerprint()
            pending = {task.remote(shared, unit, fingerprint): unit for unit in units}
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                unit = pending.pop(ready[0])
                try:
                    result = ray.get(ready[0])
                except ray.exceptions.RayTaskError as error:
                    print(f"run {unit.index} of cell {unit.cell!r} failed:", file=sys.stderr)
                    cause = getattr(error, "cause", None)
                    if isinstance(cause, BaseException):
                        raise cause from None
                    raise
                yield unit, result
        finally:
            # best effort: an error while cancelling (a worker already gone) must not replace the exception or the
            # Ctrl-C that stopped the sweep
            for reference in pending:
                try:
                    ray.cancel(reference, force=True)
                except Exception:
                    pass
            if started:
                try:
                    ray.shutdown()
                except Exception:
                    pass


#: ``--backend`` names -> classes.
BACKENDS = {"serial": SerialBackend, "processes": ProcessBackend, "ray": RayBackend}


def make_backend(
    name: str = "processes",
    workers: int | None = None,
    ray_address: str | None = None,
    gpus_per_run: float = 0.0,
) -> Backend:
    """The backend called ``name`` (``"serial"``, ``"processes"`` or ``"ray"``), sized by ``workers`` where that
    applies; ``ray_address`` and ``gpus_per_run`` configure the Ray backend."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}; got {name!r}")
    if workers is not None:
        check_int("workers", workers, 1)
    if name != "ray" and (ray_address is not None or gpus_per_run):
        raise ValueError(f"ray_address and gpus_per_run apply to the ray backend only; got backend {name!r}")
    if name == "serial":
        return SerialBackend()
    if name == "ray":
        return RayBackend(address=ray_address, workers=workers, gpus_per_run=gpus_per_run)
    return ProcessBackend(workers)
