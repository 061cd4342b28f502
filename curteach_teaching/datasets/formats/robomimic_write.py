"""Write demonstrations as a robomimic-format HDF5 file, with h5py (robomimic itself is not needed).

The layout is robomimic's (``utils/dataset.py`` reads it; its conversion scripts write it), and what
:mod:`~curteach_teaching.datasets.formats.robomimic_read` reads back:

* ``data``: attributes ``total`` (the number of steps over all demonstrations) and ``env_args`` (JSON: robomimic's
  ``{"env_name", "type", "env_kwargs"}``; type 2 is robomimic's Gym environment type, which it builds with
  ``gym.make(env_name, **env_kwargs)``);
* ``data/demo_<i>`` for ``i = 0 .. N-1``: ``actions`` ``(T, A)``, ``rewards`` ``(T,)``, ``dones`` ``(T,)`` (int64,
  1 only at a last step that ended the episode), ``obs/<key>`` ``(T, d)`` (the observation before each action) and
  ``next_obs/<key>`` ``(T, d)`` (after it); attribute ``num_samples`` = ``T`` and any further per-demonstration
  attributes given (a reset seed, a label);
* ``mask/<key>``: the filter keys, each an array of demonstration names as byte strings, as robomimic's
  ``split_train_val.py`` writes them. A key with no demonstration is not written (robomimic's loader cannot take an
  empty one).

Datasets are written without HDF5's modification times (``track_times=False``), so the same demonstrations give the
same bytes. The file is written under a hidden name in its folder and moved into place whole (``os.replace``), so an
interrupted write leaves no half-written file under the final name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curteach_teaching.datasets.formats.robomimic_mask import check_key_name
from curteach_teaching.datasets.formats.robomimic_read import require_h5py

__all__ = ["RobomimicDemo", "write_robomimic"]

#: robomimic's ``EnvType.GYM_TYPE``
GYM_TYPE = 2


@dataclass(frozen=True)
class RobomimicDemo:
    """One demonstration of ``T`` steps.

    Attributes:
        observations: ``key -> (T + 1, d)``: the observation at every step and the one after the last action (split
            into ``obs`` and ``next_obs``).
        actions: ``(T, A)``.
        rewards: ``(T,)``.
        terminated: whether the last step ended the episode (``dones[-1]``).
        attrs: further attributes of ``data/demo_<i>`` (numbers, strings or bools).
    """

    observations: Mapping[str, np.ndarray]
    actions: np.ndarray
    rewards: np.ndarray
    terminated: bool
    attrs: Mapping[str, Any] = field(default_factory=dict)


def _check(demo: RobomimicDemo, i: int) -> int:
    steps = len(demo.actions)
    if np.ndim(demo.actions) != 2 or steps < 1:
        raise ValueError(f"demo_{i}: actions must be (T >= 1, A); got shape {np.shape(demo.actions)}")
    if np.shape(demo.rewards) != (steps,):
        raise ValueError(f"demo_{i}: rewards must be ({steps},); got shape {np.shape(demo.rewards)}")
    for key, values in demo.observations.items():
        if np.ndim(values) != 2 or len(values) != steps + 1:
            raise ValueError(f"demo_{i}: observations {key!r} must be ({steps + 1}, d); got shape {np.shape(values)}")
    return steps


def write_robomimic(path: str | os.PathLike, demos: Sequence[RobomimicDemo], env_args: Mapping[str, Any],
                    masks: Mapping[str, Sequence[int]] | None = None) -> Path:
    """Write ``demos`` as ``data/demo_0 ..`` of a robomimic file at ``path`` (replacing a file there).

    Args:
        path: the ``.hdf5`` file to write.
        demos: the demonstrations, in order.
        env_args: robomimic's environment settings, stored as JSON in ``data.attrs["env_args"]``.
        masks: filter key -> the indices of its demonstrations (written as ``demo_<i>`` names, in index order).

    Returns:
        The file's path.

    Raises:
        ValueError: no demonstrations, inconsistent shapes, a bad filter key name or index.
    """
    h5py = require_h5py()
    path = Path(path).expanduser()
    if not demos:
        raise ValueError("a robomimic file needs at least one demonstration")
    steps = [_check(demo, i) for i, demo in enumerate(demos)]
    masks = dict(masks or {})
    for key, members in masks.items():
        check_key_name(key)
        if any(not 0 <= int(m) < len(demos) for m in members):
            raise ValueError(f"mask/{key} names a demonstration outside 0..{len(demos) - 1}")
    staging = path.with_name(f".{path.name}.writing-{os.getpid()}")
    try:
        with h5py.File(staging, "w") as file:
            data = file.create_group("data")
            data.attrs["total"] = int(sum(steps))
            data.attrs["env_args"] = json.dumps(dict(env_args))
            for i, (demo, length) in enumerate(zip(demos, steps)):
                group = data.create_group(f"demo_{i}")
                group.attrs["num_samples"] = int(length)
                for name, value in demo.attrs.items():
                    group.attrs[name] = value
                group.create_dataset("actions", data=np.asarray(demo.actions), track_times=False)
                group.create_dataset("rewards", data=np.asarray(demo.rewards), track_times=False)
                dones = np.zeros(length, dtype=np.int64)
                dones[-1] = int(bool(demo.terminated))
                group.create_dataset("dones", data=dones, track_times=False)
                for key, values in demo.observations.items():
                    group.create_dataset(f"obs/{key}", data=np.asarray(values)[:-1], track_times=False)
                    group.create_dataset(f"next_obs/{key}", data=np.asarray(values)[1:], track_times=False)
            for key, members in masks.items():
                if len(members):  # robomimic cannot load an empty filter key
                    names = [f"demo_{int(m)}" for m in sorted(int(m) for m in members)]
                    file.create_dataset(f"mask/{key}", data=np.array(names, dtype="S"), track_times=False)
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)
    return path
