"""robomimic's format: an HDF5 file (robomimic, MimicGen, LIBERO, RoboCasa) or a folder directly holding such files
(a LIBERO suite: one file per task), read with h5py; a kept subset written as a filter key ``mask/KEY`` in each file,
listing that file's kept demonstrations, for robomimic's ``train.hdf5_filter_key``.

The reader is :mod:`~curteach_teaching.datasets.formats.robomimic_read`, the filter key's writer (on a copy moved
over the file, or ``--in-place``) :mod:`~curteach_teaching.datasets.formats.robomimic_mask`. Each file is one group,
named by the file's stem.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_envs._util import counted
from curteach_teaching.datasets.formats.base import DatasetFormat, Output

__all__ = ["RobomimicFormat"]


def _files(sources) -> dict[str, Path]:
    """``group -> file`` of the sources: each file of a folder of them too (a LIBERO suite)."""
    from curteach_teaching.datasets.formats.robomimic_read import robomimic_files

    return {path.stem: path for source in sources for path in robomimic_files(source)}


def _filter_keys(path) -> dict:
    """The robomimic file's filter keys, ``name -> demonstration names`` (read before one is replaced)."""
    from curteach_teaching.datasets.formats.robomimic_read import demo_names, read_filter_keys, require_h5py

    with require_h5py().File(Path(path).expanduser(), "r") as file:
        return read_filter_keys(file, demo_names(file))


class RobomimicFormat(DatasetFormat):
    """robomimic HDF5 files (see the module docstring)."""

    name = "robomimic"
    in_place = True

    def detects(self, source: str | os.PathLike) -> bool:
        """A ``.hdf5``/``.h5`` file, or a folder directly holding such files (not a LeRobot folder)."""
        from curteach_teaching.datasets.formats.robomimic_read import robomimic_files

        return bool(robomimic_files(source))

    def read(self, source: str | os.PathLike, obs_keys: Sequence[str] | None) -> list:
        """:func:`~.robomimic_read.read_robomimic` of each file (one group each: the file's stem)."""
        from curteach_teaching.datasets.formats.robomimic_read import read_robomimic, robomimic_files

        return [read_robomimic(path, obs_keys) for path in robomimic_files(source)]

    def groups_are_tasks(self, source: str | os.PathLike) -> bool:
        """A folder of files is a suite of tasks (LIBERO's); one file is one group."""
        return Path(source).expanduser().is_dir()

    def episode_names(self, pool) -> list[str]:
        """robomimic's ``demo_<i>``."""
        return [str(m["demo"]) for m in pool.metadata]

    def check_outputs(self, sources, pool, key: str, out: Path, *, named: bool, overwrite: bool,
                      in_place: bool) -> None:
        """Every file can take ``mask/KEY`` (:func:`~.robomimic_mask.check_filter_key`: through a link, the file it
        points to; a copy that can keep the file's owner and group unless ``in_place``)."""
        from curteach_teaching.datasets.formats.robomimic_mask import check_filter_key

        for path in _files(sources).values():
            check_filter_key(path, key, overwrite=overwrite, in_place=in_place)

    def write_kept(self, sources, pool, kept: np.ndarray, key: str, out: Path, *, overwrite: bool,
                   in_place: bool) -> list[Output]:
        """``mask/KEY`` in each file with a kept demonstration, listing its own; a file with none keeps its earlier
        key of that name, if any. Says what a replaced key held and which keys were split from it."""
        from curteach_teaching.datasets.formats.robomimic_mask import write_filter_key

        files = _files(sources)
        groups, written = np.asarray(pool.groups, dtype=object), []
        for group, path in files.items():
            mine = kept[groups[kept] == group]
            earlier = {k: len(members) for k, members in _filter_keys(path).items()}
            where = f" of {path.name}" if len(files) > 1 else ""
            if mine.size == 0:  # a filter key lists at least one demonstration
                left = f"; its earlier mask/{key} is left as it was" if key in earlier else ""
                print(f"note: no demonstration of {path} is kept: mask/{key} is not written there{left}")
                continue
            target = write_filter_key(path, key, [pool.metadata[i]["demo"] for i in mine.tolist()],
                                      overwrite=overwrite, in_place=in_place)
            written.append(Output(str(path), f'mask/{key}: robomimic\'s "hdf5_filter_key": "{key}" in its config\'s '
                                  'train section' + (f" (a link: written into {target})" if path.is_symlink() else "")))
            if path.is_symlink():  # the link stays a link; the file it names (which other configs name too) changed
                print(f"note: {path} is a symbolic link: mask/{key} was written into the file it points to, {target}")
            if key in earlier:  # perhaps the dataset's own label (better, train): say what it held
                print(f"replaced mask/{key}{where}, which listed {counted(earlier[key], 'demonstration')}")
            derived = [f"mask/{k}" for k in (f"{key}_train", f"{key}_valid") if k in earlier]
            if key in earlier and derived:
                print(f"note: {' and '.join(derived)}{where} were split from the earlier mask/{key} and still list "
                      f"its demonstrations; split the new one again (robomimic's split_train_val.py --filter_key "
                      f"{key})")
        return written
