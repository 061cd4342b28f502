"""LeRobot's format: a local dataset folder (``meta/info.json``; v3.0, v2.1, v2.0) read with pyarrow, and a kept
subset written as ``OUT/episodes.json``, the kept ``episode_index`` values for ``LeRobotDataset(..., episodes=...)``.

The reader is :mod:`~curteach_teaching.datasets.formats.lerobot_read`. A pool's groups are the dataset's tasks; a
per-frame column ``next.X`` is read as the field ``X``, and :meth:`LeRobotFormat.field_hint` says so to a task score
that names the column.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.formats.base import DatasetFormat, Output

__all__ = ["LeRobotFormat"]

_NEXT = "next."


class LeRobotFormat(DatasetFormat):
    """LeRobot datasets (see the module docstring)."""

    name = "lerobot"
    group_word = "task"
    kept_files = ("episodes.json",)

    def detects(self, source: str | os.PathLike) -> bool:
        """A folder with ``meta/info.json``."""
        from curteach_teaching.datasets.formats.lerobot_read import is_lerobot_folder

        return is_lerobot_folder(source)

    def read(self, source: str | os.PathLike, obs_keys: Sequence[str] | None) -> list:
        """:func:`~.lerobot_read.read_lerobot`: one pool, one group per task."""
        from curteach_teaching.datasets.formats.lerobot_read import read_lerobot

        return [read_lerobot(source, obs_keys)]

    def groups_are_tasks(self, source: str | os.PathLike) -> bool:
        """Always: the groups are the dataset's tasks."""
        return True

    def field_hint(self, name: str, fields: Sequence[str]) -> str:
        """The column ``next.X`` is the field ``X`` (where ``X`` is one)."""
        short = name.removeprefix(_NEXT)
        return f" (LeRobot's {name} is the field {short!r})" if short != name and short in fields else ""

    def check_sources(self, sources: Sequence[str | os.PathLike]) -> None:
        """One dataset: ``episodes.json`` lists one dataset's episodes."""
        if len(sources) > 1:
            raise ValueError("rank writes one episodes.json for one LeRobot dataset: give one at a time")

    def check_outputs(self, sources, pool, key: str, out: Path, *, named: bool, overwrite: bool,
                      in_place: bool) -> None:
        """The subset has no name: a named one is refused."""
        if named:
            raise ValueError("--filter-key names a robomimic filter key or a Minari dataset; a LeRobot dataset's kept "
                             "episodes go to DIR/episodes.json")

    def write_kept(self, sources, pool, kept: np.ndarray, key: str, out: Path, *, overwrite: bool,
                   in_place: bool) -> list[Output]:
        """``OUT/episodes.json``: the kept ``episode_index`` values in the pool's order, with a warning where
        lerobot would read them as other episodes (:func:`~.lerobot_read.episode_indices_note`)."""
        from curteach_teaching.datasets.formats.lerobot_read import episode_indices_note

        path = out / "episodes.json"
        path.write_text(json.dumps([int(pool.episode_ids[i]) for i in kept.tolist()]) + "\n")
        note = episode_indices_note(pool)
        if note:  # lerobot would read the list as rows of its episodes table: other episodes
            print(f"warning: {path} lists episode_index values; {note}", flush=True)
        return [Output(str(path), "the kept episode_index values: LeRobotDataset(..., episodes=json.load(open(path)))")]
