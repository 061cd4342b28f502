"""Minari's format: a dataset id or folder (or a folder of several datasets) read with Minari's own storage classes,
and a kept subset written as a new Minari dataset per dataset read (``OUT/datasets/<name>-KEY-v0``).

The reader is :mod:`~curteach_teaching.datasets.formats.minari_read`, the writer
:func:`~curteach_teaching.datasets.writing.write_pool`. Minari's is the fallback format: a source no other format
claims is an id or a folder here, and the reader says what it cannot find.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.formats.base import DatasetFormat, Output

__all__ = ["MinariFormat"]


def _kept_dataset_ids(pool, key: str) -> dict:
    """``group -> the id of its kept Minari dataset``: one per dataset of the pool (a folder of several datasets
    gives one kept dataset each, with its own environment), ``<name>-KEY-v0``; ``curated/KEY-v0`` for a pool made
    in memory (no name)."""
    return {group: (re.sub(r"-v\d+$", "", group) + f"-{key}-v0") if group else f"curated/{key}-v0"
            for group in pool.group_names}


class MinariFormat(DatasetFormat):
    """Minari datasets (see the module docstring); the groups are the datasets' ids."""

    name = "minari"
    fallback = True

    def read(self, source: str | os.PathLike, obs_keys: Sequence[str] | None) -> list:
        """One pool per dataset :func:`~.minari_read.find_datasets` finds in ``source``; ``obs_keys`` are refused (a
        Minari dataset's observation space is its own)."""
        from curteach_teaching.datasets.formats.minari_read import find_datasets, read_minari

        if obs_keys is not None:
            raise ValueError(f"observation keys choose among a robomimic file's or a LeRobot dataset's; "
                             f"{str(source)!r} is read as a Minari dataset")
        return [read_minari(folder) for folder in find_datasets(source)]

    def check_outputs(self, sources, pool, key: str, out: Path, *, named: bool, overwrite: bool,
                      in_place: bool) -> None:
        """A Minari dataset holds rewards; each kept dataset ``OUT/datasets/<name>-KEY-v0`` is new unless
        ``overwrite``."""
        if not pool.has_rewards:
            raise ValueError("the kept episodes are written as a Minari dataset, which needs rewards; this pool has "
                             "none")
        for dataset_id in _kept_dataset_ids(pool, key).values():
            target = out / "datasets" / dataset_id
            if target.exists() and not overwrite:
                raise ValueError(f"{target} exists; pass --overwrite to replace it, or choose another --filter-key")

    def write_kept(self, sources, pool, kept: np.ndarray, key: str, out: Path, *, overwrite: bool,
                   in_place: bool) -> list[Output]:
        """One Minari dataset per group with any kept episode, under ``OUT/datasets`` (an earlier one of that id,
        allowed by :meth:`check_outputs`, removed first)."""
        from curteach_teaching.datasets.writing import write_pool

        root, groups, written = out / "datasets", np.asarray(pool.groups, dtype=object), []
        for group, dataset_id in _kept_dataset_ids(pool, key).items():
            mine = kept[groups[kept] == group]
            if (root / dataset_id).exists():  # refused before the scoring unless --overwrite
                shutil.rmtree(root / dataset_id)
            if mine.size == 0:
                print(f"note: no episode of {group} is kept: no dataset {dataset_id} is written")
                continue
            write_pool(pool.select(mine), dataset_id, root=root,
                       description=f"{mine.size} of {int(np.sum(groups == group))} episodes kept by curteach rank")
            written.append(Output(str(root / dataset_id), f"Minari dataset {dataset_id}: "
                                  f"minari.load_dataset({dataset_id!r}) with MINARI_DATASETS_PATH={root}"))
        return written
