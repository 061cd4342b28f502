"""The cache of the scores that train something (DemInf, the CUPID baselines): one ``.npz`` per key, named by the
key's digest, written whole or not at all, and refitted when damaged.

A trained score keys its file by everything that changes what the file holds (its settings, the seed, the data's
digest, the caller's label); :func:`cache_path` names it, :func:`write_arrays` writes it through a temporary file in
the same folder and :func:`os.replace` (a reader never sees half a file), and :func:`read_arrays` reads it back and
checks every array's shape and finiteness, so a file truncated by a full disk is said and fitted again.
(:mod:`~curteach_teaching.datasets.scores.ensemble` keeps its own reader: its key and files predate this module.)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

__all__ = ["cache_path", "cached_difficulty", "read_arrays", "write_arrays"]


def cache_path(cache: str | os.PathLike, prefix: str, key: Mapping) -> Path:
    """``cache/<prefix>-<20 hex digits>.npz``: the file of ``key`` (JSON-serialisable, its order ignored)."""
    digest = hashlib.sha256(json.dumps(dict(key), sort_keys=True).encode()).hexdigest()[:20]
    return Path(cache) / f"{prefix}-{digest}.npz"


def read_arrays(path: str | os.PathLike, shapes: Mapping[str, tuple]) -> tuple[dict | None, str]:
    """The arrays ``shapes`` names from the ``.npz`` at ``path``.

    Args:
        shapes: ``name -> shape`` every array must have (float64 and finite).

    Returns:
        ``(arrays, "")`` for an intact file; ``(None, "missing")`` where there is none; ``(None, reason)`` for a
        damaged one (not a zip, an array missing, of another shape, or not finite).
    """
    path = Path(path)
    if not path.exists():
        return None, "missing"
    try:
        with np.load(path, allow_pickle=False) as saved:
            found = {name: np.array(saved[name], dtype=np.float64) for name in shapes}
    except Exception as error:
        # a damaged zip raises nearly anything (BadZipFile, EOFError, KeyError, ValueError, OSError): all mean the
        # same here, not a usable cache
        return None, f"{type(error).__name__}: {error}"
    for name, shape in shapes.items():
        if found[name].shape != tuple(shape):
            return None, f"{name} of shape {found[name].shape}, not {tuple(shape)}"
        if not np.isfinite(found[name]).all():
            return None, f"{name} is not finite"
    return found, ""


def write_arrays(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to the ``.npz`` ``path`` atomically (its folder made where missing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    os.close(handle)
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)  # whole or absent
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cached_difficulty(cache: str | os.PathLike | None, name: str, key: Callable[[], Mapping], n: int,
                      say: Callable[[str], None] | None) -> tuple[Path | None, np.ndarray | None]:
    """A score's ``(N,)`` difficulties from its file in ``cache``, for the scores that cache that one array.

    Args:
        cache: the folder (``None``: no cache; nothing is read or written).
        name: the score's name, the file's prefix and the messages' subject.
        key: makes the file's key (called only with a cache: a key may need the data's digest).
        n: the demonstrations, the array's length.
        say: where the messages go (``None``: nowhere): read from the cache, or the file damaged and fitted again.

    Returns:
        ``(path, difficulty)``: ``path`` the file to :func:`write_arrays` ``difficulty=`` to once fitted (``None``
        without a cache), ``difficulty`` the cached array or ``None`` where it is to be fitted.
    """
    if cache is None:
        return None, None
    path = cache_path(cache, name, key())
    found, problem = read_arrays(path, {"difficulty": (n,)})
    if found is not None:
        if say is not None:
            say(f"{name} ready (read from the cache)")
        return path, found["difficulty"]
    if problem != "missing" and say is not None:
        say(f"{name}: the cached scores {path} are damaged ({problem}); fitting them again")
    return path, None
