"""What a dataset source is: one generator that ``curteach make-dataset SOURCE`` runs, with its own flags.

A source is a :class:`DatasetSource` registered in :data:`~curteach_teaching.datasets.sources.SOURCES`. The command
gives every source a sub-command of its own: the common flags (``--out``, ``--seed``, ``--workers``,
``--overwrite``, ``--no-progress``) and the ones the source adds in :meth:`DatasetSource.add_arguments`, so a flag
of another source is refused by argparse. The command then calls :meth:`~DatasetSource.check` (every argument,
nothing written) and :meth:`~DatasetSource.generate` (writes, returns what it wrote). Minari datasets are written
only through :func:`~curteach_teaching.datasets.writing.write_pool`, so that every dataset a source makes reads
back with :func:`~curteach_teaching.datasets.reading.read_pool`.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from curteach_envs._util import spawned_pool

__all__ = ["HELD_OUT_SEEDS", "TRAINING_SEEDS", "DatasetSource", "check_out_folder", "run_in_chunks", "write_staged"]

#: Reset seeds kept for evaluation: no episode a source generates starts from one of them.
HELD_OUT_SEEDS = range(0, 2**20)
#: Where the generated episodes' reset seeds are drawn from (``[low, high)``), disjoint from :data:`HELD_OUT_SEEDS`.
TRAINING_SEEDS = range(2**20, 2**31)


class DatasetSource:
    """A generator of datasets (subclass it and register an instance, or a class without arguments, in
    :data:`~curteach_teaching.datasets.sources.SOURCES`).

    Attributes:
        name: the sub-command (``"babyai"``, ``"shortest-path"``, ...).
        summary: one line for ``make-dataset --help``.
    """

    name: str = ""
    summary: str = ""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this source's own flags to its sub-command's ``parser`` (the common ones are there already)."""

    def check(self, args: argparse.Namespace) -> None:
        """Check every argument before any work: ``ValueError`` with one line naming the problem, nothing written."""

    def generate(self, args: argparse.Namespace, *, progress: bool) -> list[str]:
        """Generate and write the datasets; returns what was written (paths, one per dataset or file)."""
        raise NotImplementedError(f"dataset source {self.name!r} does not implement generate")

    def interrupted(self, args: argparse.Namespace) -> str:
        """The line ``make-dataset`` prints when Ctrl-C stops :meth:`generate` (optional to override: say what was
        kept)."""
        return f"interrupted: make-dataset {self.name} wrote nothing; run the same command again"


def check_out_folder(out: str | os.PathLike, what: str = "--out") -> Path:
    """``out`` as a path, after a one-line ``ValueError`` unless it is (or can become) a folder this process can
    write into; nothing is created."""
    out = Path(out)
    if not str(out).strip():
        raise ValueError(f"{what} must name a folder")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{what} {str(out)!r} exists and is not a folder")
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(out)!r}: cannot write in {str(existing)!r} (permission denied)")
    return out


def run_in_chunks(run_chunk: Callable[[tuple], tuple[int, list]], chunks: list[tuple], n_items: int,
                  workers: int, bar: Any) -> list:
    """``(n_items,)`` results of ``run_chunk`` over ``chunks``, in the chunks' order whatever the workers.

    Each chunk is a picklable tuple whose first element is the index of its first item; ``run_chunk(chunk)`` returns
    ``(start, results)``. With one worker (or one chunk) they run here; otherwise in a spawned process pool whose
    workers ignore Ctrl-C (:func:`curteach_envs._util.spawned_pool`). ``bar`` (a tqdm bar) advances by each chunk's
    items and is closed at the end.
    """
    results: list = [None] * n_items

    def keep(start: int, items: list) -> None:
        results[start : start + len(items)] = items
        bar.update(len(items))

    try:
        if workers == 1 or len(chunks) <= 1:
            for chunk in chunks:
                keep(*run_chunk(chunk))
        else:
            with spawned_pool(min(workers, len(chunks))) as pool:
                for start, items in pool.imap_unordered(run_chunk, chunks):
                    keep(start, items)
    finally:
        bar.close()
    return results


def write_staged(out: Path, tag: str, targets: Mapping[str, Path], write: Callable[[str, Path], None]) -> None:
    """Write every dataset of ``targets`` (``key -> its folder, directly in out``) into a hidden staging folder
    ``out/.<tag>-staging-<pid>``, then move each into place, replacing an earlier one (the caller checked
    ``--overwrite``): a failure while writing leaves every earlier dataset as it was. The staging folder is removed
    in any case.

    Args:
        out: the output folder (created if missing).
        tag: the source's name, in the staging folder's name.
        targets: the datasets' final folders, in the order they are written.
        write: ``write(key, staging)`` writes the dataset of ``key`` into ``staging / targets[key].name``.
    """
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".{tag}-staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for key in targets:
            write(key, staging)
        for target in targets.values():
            if target.exists():
                shutil.rmtree(target)
            (staging / target.name).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
