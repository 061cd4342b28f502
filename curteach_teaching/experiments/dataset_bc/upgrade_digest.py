"""Folders of ``dataset-bc`` written when the data's digest covered its actions and rewards only: re-keyed once.

A sweep's settings name its data by :func:`~curteach_teaching.datasets.prepared.pool_digest`. Until this
version that digest covered each episode's group, seed, actions and rewards, not its observations, metadata or step
infos, and the ensemble teacher's cache was keyed by the actions alone: a dataset whose observations were rescaled, or
whose filter keys were swapped, resumed the runs and read the cached scores of the data before the change. Both
digests now cover everything a run reads (:mod:`curteach_teaching.digests`).

A folder of the earlier form is upgraded once, when its recorded digest is the earlier digest of the pool read now:
every intact run file of the recorded cells (and of this sweep's cells the record lacks, where the file is of that
cell's settings under the recorded digest) is re-keyed to the new digest's fingerprint, the ensemble teacher's
cached scores of the current ensemble settings are renamed to the new cache key, and ``sweep.json`` is rewritten last
(each file atomically, so an interrupted upgrade is finished by the next command). The earlier folder recorded
nothing of the observations, so the upgrade trusts it to hold runs of this data, as the version that wrote it did;
the line it prints says so. From then on a change to the observations or labels is another sweep.
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

__all__ = [
    "legacy_pool_digest",
    "legacy_trajectories_digest",
    "rekey_runs",
    "rename_teacher_cache",
    "upgrade_digest",
]


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
    count = rekey_runs(out_dir, record, experiment)
    teacher_line = rename_teacher_cache(out_dir / "teachers", experiment, legacy_trajectories_digest(
        experiment.data.trajectories) if experiment.data is not None else "", _legacy_label(experiment, recorded))
    new_record = {**record, "settings": {**settings, "digest": experiment.digest}}
    atomic_write(record_path, lambda stream: json.dump(new_record, stream, indent=1))
    return (f"upgraded {out_dir}: the data's digest now covers its observations, metadata and step infos, not only "
            f"its actions and rewards ({count} run files re-keyed{teacher_line}; the folder recorded nothing of the "
            f"observations, so its runs are trusted to be of this data)")


def rekey_runs(out_dir: Path, record: dict, experiment: Any) -> int:
    """Re-key the intact run files of ``record``'s settings (``sweep.json`` as read) to the same settings with
    ``experiment.digest``: those of every recorded cell, and those of the experiment's cells the record lacks (a
    cell added to the folder whose ``sweep.json`` was not kept with its runs: such a file is re-keyed only when its
    fingerprint is that of the cell's settings now under the recorded digest). Returns how many were re-keyed."""
    settings = record["settings"]
    new_settings = {**settings, "digest": experiment.digest}
    own = json.loads(json.dumps({cell: experiment.cell_settings(cell) for cell in experiment.cells}))
    cells = {**own, **record["cells"]}  # the record's own settings of a cell come first
    return sum(rekey_run_file(path, fingerprint({"sweep": settings, "cell": mine}),
                              fingerprint({"sweep": new_settings, "cell": mine}))
               for cell, mine in cells.items() for path in sorted((out_dir / "runs" / cell).glob("run_*.json")))


def _legacy_label(experiment: Any, digest: str) -> str:
    """The ensemble cache's label of the earlier form: the policy, the digest and the observation keys."""
    keys = "" if experiment.obs_keys is None else "|obs=" + ",".join(experiment.obs_keys)
    return f"{experiment.policy}|{digest}{keys}"


def rename_teacher_cache(cache: Path, experiment: Any, old_data: str, old_label: str) -> str:
    """Rename the ensemble's cached scores of the current ensemble settings from the key of data digest
    ``old_data`` (the trajectories' digest of that form) and label ``old_label`` to the current key; returns
    ``", the ensemble teacher's cached scores renamed"`` or ``""`` (nothing there, or the new file exists)."""
    if experiment.data is None or not old_data or not cache.is_dir():
        return ""
    from curteach_teaching.datasets.scores.registry import trained_score

    # the one trained score whose caches a re-keyed folder keeps: the ensemble's (the others are fitted again)
    teacher = trained_score("ensemble", experiment.score_options()).teacher(experiment.teacher_seed)
    old = teacher.cache_path(cache, old_data, old_label)
    new = teacher.cache_file(experiment.data.trajectories, cache, experiment.cache_label())
    if old == new or not old.is_file() or new.exists():
        return ""
    os.replace(old, new)
    return ", the ensemble teacher's cached scores renamed"
