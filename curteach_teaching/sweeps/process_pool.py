"""A pool of spawned worker processes that notices a worker's death and knows which task it held.

``multiprocessing.Pool`` replaces a worker killed from outside (``kill -9``, the out-of-memory killer) and never
answers for the task it was running, so whoever waits for that answer waits forever;
``concurrent.futures.ProcessPoolExecutor`` notices, but breaks the whole pool and fails every task in flight. Here
each worker has its own pipe and is given one task at a time, and the driver waits on the pipes and on the
processes' sentinels together: a sentinel that fires before the answer names the lost task exactly, and only that
worker is replaced (under the same index). Workers are ``spawn``-ed (no inherited locks or threads), ignore the
terminal's Ctrl-C (the driver decides what stops) and die with the driver (:func:`~.orphans.die_with_parent`).

Closing the pool ends the workers the way that lets them clean up: an idle worker is told to stop and returns, a
busy one gets ``SIGTERM``, which ends its task with ``SystemExit`` (so an atomic write in flight removes its
temporary file, and multiprocessing's finalizers unregister the semaphores the worker made, e.g. tqdm's lock; a
killed worker leaves them to the resource tracker, which warns of "leaked semaphore objects" at exit). A worker
still alive after :data:`STOP_GRACE` seconds is killed.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait

from curteach_teaching.sweeps.orphans import die_with_parent

__all__ = ["PoolEvent", "WorkerPool"]

#: seconds a closing pool's workers get to end their task and exit before they are killed
STOP_GRACE = 5.0


class RemoteTraceback(Exception):
    """The formatted traceback of an error raised in a worker (attached as the error's ``__cause__``)."""

    def __str__(self) -> str:
        return "\n" + self.args[0]


def _portable(error: BaseException) -> tuple:
    """``(error, its traceback as text)``; ``error`` becomes a ``RuntimeError`` naming it if it cannot be pickled
    (a pickled exception loses its ``__cause__``, so the text travels beside it)."""
    text = "".join(traceback.format_exception(error))
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        error = RuntimeError(f"{type(error).__name__}: {error}")
    return error, text


def _exit_on_sigterm(signum, frame) -> None:
    # A second SIGTERM would interrupt the clean-ups of the first, e.g. the finalizers at exit, with a traceback: a
    # scheduler's SIGTERM reaches the workers and the driver, and the driver's closing pool sends its own.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)  # unwinds the task: its clean-ups and the process's finalizers run


def _worker_main(connection, index: int, parent_pid: int, function: Callable, initializer: Callable | None) -> None:
    """A worker: answer each task received with ``(result, None)`` or ``(None, (error, traceback))`` until told to
    stop (``None``, or ``SIGTERM`` in the middle of a task)."""
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if initializer is not None:
        initializer(index)
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):  # the driver is gone
            return
        if task is None:
            return
        try:
            answer = (function(task), None)
        except Exception as error:
            answer = (None, _portable(error))
        try:
            connection.send(answer)
        except (BrokenPipeError, EOFError, ConnectionError):
            return
        except Exception as error:  # a result that cannot be pickled
            connection.send((None, _portable(error)))


class _Worker:
    def __init__(self, context, index: int, function: Callable, initializer: Callable | None):
        self.index = index
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_worker_main, name=f"curteach-worker-{index}", daemon=True,
                                       args=(child, index, os.getpid(), function, initializer))
        self.process.start()
        child.close()
        self.task = None

    def give(self, task) -> None:
        self.task = task
        try:
            self.connection.send(task)
        except (BrokenPipeError, ConnectionError):  # it died while idle: its sentinel reports it next
            pass

    def ask_to_stop(self) -> None:
        """Idle: told to stop (it returns); busy: ``SIGTERM`` (its task ends with ``SystemExit``)."""
        if not self.process.is_alive():
            return
        if self.task is None:
            try:
                self.connection.send(None)
                return
            except (BrokenPipeError, ConnectionError, OSError):  # its end is gone: a signal is all that is left
                pass
        self.process.terminate()

    def stop(self, grace: float = 0.0) -> None:
        """Wait up to ``grace`` seconds for the process to end, then kill it."""
        self.process.join(timeout=grace)
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
        self.connection.close()


@dataclass(frozen=True)
class PoolEvent:
    """What happened to one task: ``result``, or ``error`` (it raised), or ``exit_code`` (its worker died first:
    the process's exit code, negative for a signal, as :attr:`multiprocessing.Process.exitcode`)."""

    task: object
    result: object = None
    error: BaseException | None = None
    exit_code: int | None = None

    @property
    def died(self) -> bool:
        """Whether the worker died before answering."""
        return self.exit_code is not None


class WorkerPool:
    """``workers`` spawned processes computing ``function(task)``, one task per worker at a time.

    Args:
        workers: processes (>= 1).
        function: a picklable (module-level) function.
        initializer: called as ``initializer(index)`` first in each worker, ``index`` in ``1 .. workers`` (a
            replaced worker gets the index of the one it replaces).
    """

    def __init__(self, workers: int, function: Callable, initializer: Callable | None = None):
        self._context = multiprocessing.get_context("spawn")
        self._function = function
        self._initializer = initializer
        self._workers: list[_Worker] = []
        self._queue: list = []
        try:
            for index in range(1, workers + 1):
                self._workers.append(self._start(index))
        except BaseException:
            self.close()
            raise

    def _start(self, index: int) -> _Worker:
        return _Worker(self._context, index, self._function, self._initializer)

    def submit(self, task) -> None:
        """Queue ``task``; an idle worker takes it at once."""
        self._queue.append(task)
        self._dispatch()

    def _dispatch(self) -> None:
        for worker in self._workers:
            if not self._queue:
                return
            if worker.task is None:
                worker.give(self._queue.pop(0))

    def retry(self, task) -> None:
        """Queue ``task`` again, ahead of the others (e.g. after its worker died)."""
        self._queue.insert(0, task)
        self._dispatch()

    def events(self, poll_interval: float = 0.2) -> Iterator[PoolEvent]:
        """Yield one :class:`PoolEvent` per answered task or dead worker, until no task is queued or running.

        A dead worker is replaced before its event is yielded; its task is not requeued (see :meth:`retry`). The
        driver wakes up every ``poll_interval`` seconds, so Ctrl-C stays prompt.
        """
        while self._queue or any(worker.task is not None for worker in self._workers):
            busy = [worker for worker in self._workers if worker.task is not None]
            ready = wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout=poll_interval)
            for worker in busy:
                if worker.connection in ready or worker.process.sentinel in ready:
                    event = self._collect(worker)
                    if event is not None:
                        yield event
            self._dispatch()

    def _collect(self, worker: _Worker) -> PoolEvent | None:
        task = worker.task
        try:
            if worker.connection.poll():  # an answer sent just before dying still counts
                result, failure = worker.connection.recv()
                worker.task = None
                if failure is None:
                    return PoolEvent(task, result=result)
                error, text = failure
                error.__cause__ = RemoteTraceback(text)
                return PoolEvent(task, error=error)
        except (EOFError, OSError):
            pass
        if worker.process.is_alive():
            return None
        worker.process.join()
        exit_code = worker.process.exitcode
        worker.stop()
        self._workers[self._workers.index(worker)] = self._start(worker.index)
        return PoolEvent(task, exit_code=exit_code if exit_code is not None else -signal.SIGKILL)

    def close(self, grace: float = STOP_GRACE) -> None:
        """Stop every worker now (tasks in flight are dropped): each is asked to end and given ``grace`` seconds in
        all to exit cleanly (module docstring), then killed."""
        for worker in self._workers:
            worker.ask_to_stop()
        deadline = time.monotonic() + grace
        for worker in self._workers:
            worker.stop(max(0.0, deadline - time.monotonic()))
        self._workers = []
        self._queue = []
