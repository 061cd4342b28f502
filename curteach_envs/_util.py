"""Library-wide helpers (private): integer argument checks, counts in words, atomic file writes, forward-pass
pieces and the spawned process pool of the dataset generators.

Used by the environments, the dataset files and the teaching layer's result files. This is the one private module
that other modules (in both packages) may import from.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["check_int", "check_positive", "counted", "atomic_write", "CPU_PIECE_ROWS", "row_pieces"]

#: Rows per forward pass of a network on the CPU within a larger chunk (:func:`row_pieces`): the activations of the
#: navigation CNN for 1024 rows stay in the cache; one pass over 4096-8192 rows takes 20-50% more CPU time.
CPU_PIECE_ROWS = 1024


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``int(value)`` if it is an integer (not a bool) ``>= low`` and, when given, ``<= high``.

    Raises:
        ValueError: ``"{name} must be an integer >= {low}; got ..."`` or ``"... in [{low}, {high}]; got ..."``.
    """
    bad = isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low
    if bad or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {allowed}; got {value!r}")
    return int(value)


def check_positive(name: str, value: Any) -> float:
    """``float(value)`` if it is a real number (not a bool), finite and ``> 0``.

    Raises:
        ValueError: ``"{name} must be a finite number > 0; got ..."``.
    """
    is_real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if not (is_real and np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def counted(count: int, noun: str) -> str:
    """``"1 run"``, ``"0 runs"``, ``"5 runs"``: a count and its noun (plural by an added ``s``) for messages."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(
    path: str | os.PathLike,
    write: Callable[[IO], None],
    newline: str | None = None,
    binary: bool = False,
) -> Path:
    """Write a file atomically: ``write(stream)`` fills a temporary file in the same folder (``.NAME.*.tmp``), which
    is flushed, synced, given the usual permissions (``0o666`` less the umask) and then renamed over ``path``
    (``os.replace``). On any error the temporary file is removed and ``path`` is left as it was. Creates the folder.

    Args:
        path: the file to write.
        write: fills the open stream (UTF-8 text, or bytes with ``binary=True``).
        newline: the text stream's ``newline``; text mode only.
        binary: open the stream in binary mode.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: ``newline`` given with ``binary=True``.
    """
    if binary and newline is not None:
        raise ValueError(f"newline applies to text files only; got newline={newline!r} with binary=True")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)  # reopened by name below, so a failing open cannot leak the descriptor
    try:
        if binary:
            stream = open(temporary, "wb")
        else:
            stream = open(temporary, "w", encoding="utf-8", newline=newline)
        with stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def row_pieces(begin: int, end: int, rows: int | None) -> list[tuple[int, int]]:
    """Rows ``[begin, end)`` as consecutive ``(start, stop)`` pieces of ``rows`` to ``2 * rows - 1`` rows each; one
    piece if the range has fewer than ``2 * rows`` rows or ``rows`` is ``None``.

    A chunk of a batched no-grad pass is forwarded piece by piece on the CPU (``rows`` =
    :data:`CPU_PIECE_ROWS`). The outputs are bit-identical to one pass over the chunk: with torch's CPU kernels a
    row's output depends on the rest of its batch only in batches of 1-3 rows (measured for the navigation CNN and
    SB3 MLP policies, torch 2.13, x86-64 AVX2), and no piece is shorter than its chunk or ``rows``.
    """
    n = end - begin
    k = 1 if rows is None else max(1, n // rows)
    bounds = [begin + i * n // k for i in range(k + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _pool_worker_signals() -> None:
    """A pool worker leaves Ctrl-C to the driver, which says what was kept and stops the pool, and ends on SIGTERM,
    by which the pool stops it (``terminate``): a driver started with SIGTERM ignored passes that on to the workers
    it spawns, and the pool would then wait for them forever."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def spawned_pool(processes: int) -> Iterator[Any]:
    """A ``multiprocessing`` pool of ``processes`` spawned workers (spawn, not fork: a forked child would inherit the
    driver's torch and MuJoCo state and open files) that ignore Ctrl-C: the driver handles it. The pool is closed
    when the block ends normally and terminated however it ends (an interrupt included), then joined."""
    import multiprocessing

    pool = multiprocessing.get_context("spawn").Pool(processes, initializer=_pool_worker_signals)
    try:
        yield pool
        pool.close()
    finally:
        pool.terminate()
        pool.join()
