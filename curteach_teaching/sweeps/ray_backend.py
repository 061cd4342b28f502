"""The Ray backend: one Ray task per unit on a Ray cluster, or on a local Ray instance started for the sweep.

Install with ``pip install "curteach[ray]"``; Ray is imported only when this backend runs. Workers compute and return
the result; the driver writes every file, so worker nodes need no shared disk.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.registry import PluginError
from curteach_teaching.sweeps.backends import (
    Backend,
    LostRun,
    Unit,
    capped_workers,
    code_fingerprint,
    compute_run,
    enter_worker,
)
from curteach_teaching.sweeps.results import RunResult

__all__ = ["RayBackend", "check_ray_address"]


def _ray_compute(experiment, unit: Unit, driver_fingerprint: str) -> RunResult:
    """The Ray task: check that this worker runs the driver's code, then compute one unit."""
    # The terminal's Ctrl-C reaches every process of its group, local Ray workers included: the driver, not each
    # task, decides what stops (it cancels the tasks), as with the process pool's workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    enter_worker(0)
    mine = code_fingerprint()
    if mine != driver_fingerprint:
        raise RuntimeError(
            f"curteach on this Ray worker ({mine}, pid {os.getpid()}) differs from the driver's "
            f"({driver_fingerprint}); install the same version on every node"
        )
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
            ray.init(num_cpus=capped_workers(self.workers), **options)
        return True

    def run_units(self, experiment, units):
        """Submit one Ray task per unit and yield results as they arrive; cancel what is left on exit."""
        try:
            import ray
        except ImportError as error:
            raise ValueError('the ray backend needs Ray: pip install "curteach[ray]"') from error
        from curteach_teaching.sweeps.orphans import Reaper

        units = list(units)
        # a local instance we start (no address) must not outlive this process, even if it is killed
        local = not (ray.is_initialized() or self.address or os.environ.get("RAY_ADDRESS"))
        # Ray's core ends this process with exit code 1 (no Python error to catch) when the local raylet dies, e.g.
        # after one of its agents died: the reaper's watcher then says what happened, as the driver cannot
        epitaph = (f"curteach: error: the sweep's driver (pid {os.getpid()}) ended before the sweep did: it was "
                   "killed, or Ray ended it because a process of the local Ray instance (its raylet or an agent) died; "
                   "the local Ray instance is stopped and the runs saved so far stay: run the same command again to "
                   "resume")
        with Reaper(epitaph=epitaph) if local else contextlib.nullcontext():
            started = self._connect(ray)
            try:
                # a local instance (started by _connect above) is shut down below, which ends its workers and their
                # tasks; cancelling them first races Ray's own bookkeeping (a task that finishes while it is
                # force-cancelled ends the driver in a failed internal check, 'Tried to complete task that was not
                # pending'), so only the tasks of an instance that outlives the sweep are cancelled
                yield from self._run(ray, experiment, units, cancel=not local)
            finally:
                if started:
                    try:
                        ray.shutdown()
                    except Exception:  # it must not replace the error or the Ctrl-C that ended the sweep
                        pass

    def _run(self, ray, experiment, units, cancel: bool = True):
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
                    cause = getattr(error, "cause", None)
                    if not isinstance(cause, PluginError):  # a plug-in's error is one line and a log (sweep.py)
                        print(f"run {unit.index} of cell {unit.cell!r} failed:", file=sys.stderr)
                    if isinstance(cause, BaseException):
                        raise cause from None
                    raise
                except ray.exceptions.RayError as error:  # its worker, node or object is gone, retries spent
                    first_line = (str(error).strip().splitlines() or [""])[0][:200]
                    # only a crashed worker is known to have used up Ray's retries (a dead raylet ends them at once)
                    crashed = isinstance(error, ray.exceptions.WorkerCrashedError)
                    raise LostRun(unit, self.max_retries + 1 if crashed else None,
                                  f"Ray: {type(error).__name__}: {first_line}") from None
                yield unit, result
        finally:
            # best effort: an error while cancelling (a worker already gone) must not replace the exception or the
            # Ctrl-C that stopped the sweep
            for reference in pending if cancel else ():
                try:
                    ray.cancel(reference, force=True)
                except Exception:
                    pass
