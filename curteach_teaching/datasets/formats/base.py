"""What a dataset format is: the one class that knows a storage layout, from detecting it to writing a kept subset.

A format is a :class:`DatasetFormat` registered in :data:`~curteach_teaching.datasets.formats.FORMATS`. Everything
outside the format asks it; nothing tests a format's name:

* :func:`~curteach_teaching.datasets.reading.read_pool` finds the format of each source
  (:func:`~curteach_teaching.datasets.formats.format_of`: the first registered format whose :meth:`~DatasetFormat.
  detects` claims the source, the fallback format, Minari's, when none does) and calls its :meth:`~DatasetFormat.read`,
  which reads and checks the source into pools of plain arrays;
* ``curteach rank`` asks it whether the sources can share one kept subset (:meth:`~DatasetFormat.check_sources`),
  checks before any scoring that the subset can be written (:meth:`~DatasetFormat.check_outputs`), names the episodes
  in ``scores.csv`` (:meth:`~DatasetFormat.episode_names`), calls the groups by its :attr:`~DatasetFormat.group_word`
  and writes the subset in the format's own terms (:meth:`~DatasetFormat.write_kept`);
* ``curteach dataset-bc`` asks whether a source's groups are a suite of tasks rather than a ladder of levels
  (:meth:`~DatasetFormat.groups_are_tasks`), which decides the default task score;
* a task score that names a field the format spells otherwise gets its hint (:meth:`~DatasetFormat.field_hint`).

Methods receive the sources as the user gave them (a path, or a string naming a path or an id) and the pool read
from them; a format holds no state of its own, so one instance serves every call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["DatasetFormat", "Output"]


class Output(NamedTuple):
    """One thing ``rank`` wrote: its ``path`` (a file or folder, as a path and nothing else, for a script to open) and
    ``what`` it is or how to use it, in words. ``rank.json``'s ``outputs`` lists them as ``{"path", "what"}``."""

    path: str
    what: str


class DatasetFormat:
    """A storage layout of demonstrations (subclass it and register the class, made without arguments, in
    :data:`~curteach_teaching.datasets.formats.FORMATS`).

    Attributes:
        name: the format's name, as ``rank.json``'s ``format`` and rank's messages give it (``"robomimic"``).
        group_word: what one group of a pool read from it is, singular, for a figure's axis (``"dataset"``,
            LeRobot's ``"task"``).
        fallback: read what no other format claims (Minari's: an id or a folder); one format at most.
        in_place: the kept subset can be written into the source itself (``rank --in-place``: robomimic's filter key).
        kept_files: files of rank's output folder that :meth:`write_kept` writes (LeRobot's ``episodes.json``): an
            earlier rank's copy is removed when this rank writes none, so that no file there describes another ranking.
    """

    name: str = ""
    group_word: str = "dataset"
    fallback: bool = False
    in_place: bool = False
    kept_files: tuple[str, ...] = ()

    # ------------------------------------------------------------------ reading
    def detects(self, source: str | os.PathLike) -> bool:
        """Whether ``source`` is stored in this format (cheap: a name's ending, a marker file; nothing is read)."""
        return False

    def read(self, source: str | os.PathLike, obs_keys: Sequence[str] | None) -> list:
        """The pools ``source`` holds, read and checked, one per dataset of it (a folder may hold several).

        Args:
            source: what :meth:`detects` claimed.
            obs_keys: the observation keys the user chose, concatenated in this order, or ``None`` for the format's
                default; a format without keys refuses them.

        Returns:
            A non-empty list of :class:`~curteach_teaching.datasets.pool.EpisodePool`, in the source's order, each
            episode ``i`` of ``L_i`` steps with ``obs (L_i + 1, ...)`` and ``acts (L_i, ...)``; group names distinct
            between pools.

        Raises:
            ValueError (one line): what cannot be read, or is read but fails a check (shapes, NaN, spaces).
        """
        raise NotImplementedError(f"dataset format {self.name!r} does not implement read")

    def groups_are_tasks(self, source: str | os.PathLike) -> bool:
        """Whether the groups read from ``source`` are a suite of different tasks (LeRobot's tasks, a folder of
        robomimic files) rather than datasets a user lists as a ladder of levels (``dataset-bc``'s default task
        score is ``level`` for a ladder, ``length`` otherwise)."""
        return False

    def field_hint(self, name: str, fields: Sequence[str]) -> str:
        """``" (...)"`` when ``name``, which no episode has as a field, is this format's spelling of one of ``fields``
        (LeRobot's column ``next.success`` is the field ``success``); else ``""``."""
        return ""

    # ------------------------------------------------------------------ the kept subset
    def check_sources(self, sources: Sequence[str | os.PathLike]) -> None:
        """ValueError (one line) unless one kept subset of ``sources`` together can be written (LeRobot's
        ``episodes.json`` names one dataset's episodes)."""

    def episode_names(self, pool) -> list[str]:
        """``N`` names of the pool's episodes as the format's users know them (default: the episode ids)."""
        return [str(int(e)) for e in pool.episode_ids]

    def check_outputs(self, sources: Sequence[str | os.PathLike], pool, key: str, out: Path, *, named: bool,
                      overwrite: bool, in_place: bool) -> None:
        """ValueError (one line) unless :meth:`write_kept` with these arguments will succeed; nothing is written.

        Args:
            sources: the sources ``pool`` was read from.
            key: the subset's name (``--filter-key``, default ``curated``), already checked to be letters, digits,
                ``_``, ``.`` or ``-``.
            out: rank's output folder (perhaps not there yet).
            named: whether the user named ``key`` (a format whose subset has no name refuses a named one).
            overwrite: an existing subset of that name may be replaced.
            in_place: the subset goes into the source itself (``--in-place``; only where :attr:`in_place`).
        """

    def write_kept(self, sources: Sequence[str | os.PathLike], pool, kept: np.ndarray, key: str, out: Path, *,
                   overwrite: bool, in_place: bool) -> list[Output]:
        """Write the subset of ``pool`` at the ``(K,)`` int64 pool indices ``kept`` (ascending) in the format's own
        terms; returns what was written, one :class:`Output` (path, and what it is in words) per file or folder."""
        raise NotImplementedError(f"dataset format {self.name!r} does not write a kept subset")
