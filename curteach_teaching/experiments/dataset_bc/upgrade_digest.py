"""Folders of ``dataset-bc`` written when the data's digest covered its actions and rewards only: re-keyed once.

A sweep's settings name its data by :func:`~curteach_teaching.datasets.prepared.pool_digest`. Until this
version that digest covered each episode's group, seed, actions and rewards, not its observations, metadata or step
infos, and the ensemble teacher's cache was keyed by the actions alone: a dataset whose observations were rescaled, or
whose filter keys were swapped, resumed the runs and read the cached scores of the data before the change. Both
digests now cover everything a run reads (:mod:`curteach_teaching.digests`).

A folder of the earlier form is upgraded once, when its recorded digest is the earlier digest of the pool read now:
every intact run file of the recorded cells is re-keyed to the new digest's fingerprint, the ensemble teacher's cached
scores of the current ensemble settings are renamed to the new cache key, and ``sweep.json`` is rewritten last (each
file atomically, so an interrupted upgrade is finished by the next command). The earlier folder recorded nothing of
the observations, so the upgrade trusts it to hold runs of this data, as the version that wrote it did; the line it
prints says so. From then on a change to the observations or labels is another sweep.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from curteach_envs._util import atomic_write
from curteach_teaching.experiments.dataset_bc.migrate import rekey_run_file
from curteach_teaching.sweeps.folders import RECORD_FORMAT, RECORD_NAME
from curteach_teaching.sweeps.results import fingerprint

__all__ = ["legacy_pool_digest", "legacy_trajectories_digest", "upgrade_digest"]


def legacy_pool_digest(pool: Any) -> str:
    """The earlier :func:`~curteach_teaching.datasets.prepared.pool_digest`: SHA-256 of each episode's
    group, seed, length, actions and rewards (as float64)."""
    digest = hashlib.sha256()
    for group, seed, trajectory in zip(pool.groups, pool.seeds, pool.trajectories, strict=True):
        digest.update(f"{group}|{seed}|{len(trajectory.acts)}|".encode())
        digest.update(np.ascontiguousarray(trajectory.acts).tobytes())
        rews = getattr(trajectory, "rews", None)
        if rews is not None:
            digest.update(np.ascontiguousarray(rews, dtype=np.float64).tobytes())
    return digest.hexdigest()


def legacy_trajectories_digest(trajectories: Any) -> str:
    """The ensemble cache's earlier data digest: SHA-256 of each trajectory's length, action dtype and actions."""
    digest = hashlib.sha256()
    for trajectory in trajectories:
        acts = np.ascontiguousarray(trajectory.acts)
        digest.update(f"{len(acts)}|{acts.dtype}|".encode())
        digest.update(acts.tobytes())
    return digest.hexdigest()


def upgrade_digest(out_dir: str | os.PathLike, pool: Any, experiment: Any) -> str:
    """Re-key ``out_dir``'s sweep to the new digest of ``pool`` when it records the earlier digest of that pool.

    Args:
        out_dir: the sweep's folder (one of the per-cell form: :func:`~curteach_teaching.experiments.dataset_bc.
            migrate.upgrade_folder` first brings older forms to it).
        pool: the pool as read now (the whole pool, before any held-out split).
        experiment: the prepared experiment (:attr:`digest` the pool's new digest, :attr:`data` set): its ensemble
            settings and encoded trajectories name the teacher's cached scores.

    Returns:
        One line saying what was upgraded, or ``""`` (no folder, one of the new digest, or one of other data, which
        the sweep refuses with its own message).
    """
    out_dir = Path(out_dir)
    record_path = out_dir / RECORD_NAME
    try:
        record = json.loads(record_path.read_text())
        settings, cells = record["settings"], record["cells"]
        recorded = settings["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    if record.get("format") != RECORD_FORMAT or not isinstance(cells, dict) or recorded == experiment.digest or \
            recorded != legacy_pool_digest(pool):
        return ""
    new_settings = {**settings, "digest": experiment.digest}
    count = sum(rekey_run_file(path, fingerprint({"sweep": settings, "cell": own}),
                               fingerprint({"sweep": new_settings, "cell": own}))
                for cell, own in cells.items() for path in sorted((out_dir / "runs" / cell).glob("run_*.json")))
    teacher_line = _rename_teacher_cache(out_dir / "teachers", experiment, recorded)
    atomic_write(record_path, lambda stream: json.dump({**record, "settings": new_settings}, stream, indent=1))
    return (f"upgraded {out_dir}: the data's digest now covers its observations, metadata and step infos, not only "
            f"its actions and rewards ({count} run files re-keyed{teacher_line}; the folder recorded nothing of the "
            f"observations, so its runs are trusted to be of this data)")


def _rename_teacher_cache(cache: Path, experiment: Any, old_digest: str) -> str:
    """Rename the ensemble's cached scores of the current ensemble settings from the earlier key to the new one."""
    if experiment.data is None or not cache.is_dir():
        return ""
    from curteach_teaching.datasets.scores.registry import trained_score

    # the one trained score whose caches predate the new digest: the ensemble's
    teacher = trained_score("ensemble", experiment.score_options()).teacher(experiment.teacher_seed)
    label = experiment.cache_label()
    trajectories = experiment.data.trajectories
    keys = "" if experiment.obs_keys is None else "|obs=" + ",".join(experiment.obs_keys)
    old = teacher.cache_path(cache, legacy_trajectories_digest(trajectories), f"{experiment.policy}|{old_digest}{keys}")
    new = teacher.cache_file(trajectories, cache, label)
    if not old.is_file() or new.exists():
        return ""
    os.replace(old, new)
    return ", the ensemble teacher's cached scores renamed"
