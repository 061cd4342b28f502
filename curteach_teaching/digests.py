"""SHA-256 digests of demonstrations: what saved results and caches are keyed by.

A result computed from one dataset must never be taken for one of another: a sweep resumes only runs of the data its
settings name, and the ensemble teacher's cache is read only for the demonstrations it was fitted on. So a digest
covers every value a computation reads (observations as well as actions, an episode's metadata and step infos), and
not where the data is stored (a moved dataset keeps its digest).

:func:`feed` adds one value to a running ``hashlib`` digest without ambiguity: every value goes in with its kind and
size (an array with its dtype and shape, a string with its length, a mapping with its keys in sorted order), so two
different sequences of values never feed the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["feed", "trajectories_digest"]


def feed(digest: Any, value: Any) -> None:
    """Add ``value`` to ``digest`` (a ``hashlib`` object), tagged with its kind and size.

    value: ``None``, a bool, int, float or str (NumPy scalars too), a NumPy array of any shape (an object array, such
    as a ``Text`` space's strings, by its elements), a list or tuple of such values, a mapping of them (keys sorted by
    their text), or an imitation ``DictObs`` (as the mapping it wraps).

    Raises:
        ValueError: a value of another type (named), which a digest cannot cover faithfully.
    """
    if hasattr(value, "unwrap") and hasattr(value, "items"):  # imitation's DictObs: a mapping of arrays
        value = dict(value.items())
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float)):
        # JSON spells True and 1, 1 and 1.0 apart; repr keeps a float's every bit
        text = repr(value) if isinstance(value, float) else json.dumps(value)
        digest.update(f"{type(value).__name__[0]}{text}|".encode())
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        digest.update(f"s{len(data)}|".encode())
        digest.update(data)
    elif isinstance(value, bytes):
        digest.update(f"y{len(value)}|".encode())
        digest.update(value)
    elif isinstance(value, np.ndarray):
        digest.update(f"a{value.dtype.str}{value.shape}|".encode())
        if value.dtype.hasobject:
            for item in value.reshape(-1):
                feed(digest, item)
        else:
            digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, Mapping):
        digest.update(f"m{len(value)}|".encode())
        for key in sorted(value, key=str):
            feed(digest, str(key))
            feed(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"l{len(value)}|".encode())
        for item in value:
            feed(digest, item)
    else:
        raise ValueError(f"cannot digest a value of type {type(value).__name__}")


def trajectories_digest(trajectories: Iterable[Any]) -> str:
    """SHA-256 (hex) of imitation trajectories' observations, actions, rewards (where they have them) and terminal
    flags, in order: ``trajectories[i].obs`` ``(L_i + 1, ...)`` (an array or a ``DictObs``), ``.acts`` ``(L_i, ...)``.
    """
    digest = hashlib.sha256(b"curteach trajectories v2\n")
    for trajectory in trajectories:
        feed(digest, trajectory.obs)
        feed(digest, trajectory.acts)
        feed(digest, getattr(trajectory, "rews", None))
        feed(digest, bool(trajectory.terminal))
    return digest.hexdigest()
