"""What a ``make-dataset`` source provides: its name, its flags, a check that writes nothing, and the generation."""

from __future__ import annotations

import argparse

__all__ = ["DatasetSource"]


class DatasetSource:
    """One kind of dataset ``curteach make-dataset NAME`` writes.

    Attributes:
        name: the command's positional argument (``"metaworld"``).
        summary: one line for ``make-dataset --help``.
    """

    name: str = ""
    summary: str = ""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this source's own flags to ``parser`` (the command's common ones are already there)."""
        raise NotImplementedError

    def check(self, args: argparse.Namespace) -> None:
        """Refuse bad flags with a one-line ``ValueError``; nothing is written."""
        raise NotImplementedError

    def generate(self, args: argparse.Namespace, *, progress: bool) -> list[str]:
        """Generate and write the datasets; return the paths written."""
        raise NotImplementedError
