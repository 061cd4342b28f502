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
from pathlib import Path

__all__ = ["DatasetSource", "check_out_folder"]


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
