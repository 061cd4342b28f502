"""What ``curteach rank`` checks before scoring about where its outputs go, the call that writes the kept share
through the dataset's format (:class:`~curteach_teaching.datasets.formats.base.DatasetFormat`: robomimic's filter key,
LeRobot's ``episodes.json``, a new Minari dataset, or a registered format's own), and the order the outputs are
written in, which is what an interrupt leaves.

The order: the kept share first (the selection itself), then ``scores.csv`` (whose ``kept`` column describes it),
``scores.png``, and ``rank.json`` last, each file written under a temporary name and renamed into place, so that a file
of rank's in the folder is whole. The earlier ranking's ``scores.csv``, ``scores.png`` and ``rank.json`` in a reused
folder are removed before the kept share is written: at no moment does the folder hold a ``scores.csv`` or a
``rank.json`` describing a selection other than the one written. An interrupt says what was written and what was
not (:func:`write_outputs`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.formats.base import Output

__all__ = ["RANK_FILES", "check_out_outside", "check_outputs", "replace_file", "write_kept", "write_outputs"]

#: the files of rank's own in its output folder (besides a format's kept files and the ensemble cache ``teachers/``)
RANK_FILES = ("scores.csv", "scores.png", "rank.json")

#: one output step: its name (a file of the folder, or "the kept share"), and the call that writes it, given what was
#: written before it, returning what it wrote
Step = tuple[str, Callable[[list[Output]], list[Output]]]


def check_out_outside(out: Path, sources) -> None:
    """Refuse an output folder inside a dataset's own folder (a LeRobot root, a Minari dataset's folder, a folder of
    robomimic files), where rank's files would become part of the dataset."""
    for dataset in sources:
        source = Path(str(dataset)).expanduser()
        if source.is_dir():
            inside, folder = out.resolve(), source.resolve()
            if inside == folder or folder in inside.parents:
                raise ValueError(f"--out {str(out)!r} is inside the dataset's folder {str(source)!r}; choose a "
                                 "folder outside it")


def check_outputs(args, fmt, sources, pool, key: str, out: Path) -> None:
    """Refuse, before any scoring, what the kept subset's output would refuse: the flags that need ``--keep``,
    ``--in-place`` for a format that cannot write in place, a bad ``--filter-key``, then the format's own checks."""
    if args.keep is None:
        if args.filter_key is not None or args.overwrite or args.in_place:
            raise ValueError("--filter-key, --overwrite and --in-place say where the kept share goes: give --keep too")
        return
    if args.in_place and not fmt.in_place:
        raise ValueError("--in-place writes a robomimic file's filter key; this dataset's kept share is a new file")
    from curteach_teaching.datasets.formats.robomimic_mask import check_key_name

    try:
        check_key_name(key)
    except ValueError:
        raise ValueError(f"--filter-key must be letters, digits, '_', '.' or '-'; got {key!r}") from None
    fmt.check_outputs(sources, pool, key, out, named=args.filter_key is not None, overwrite=args.overwrite,
                      in_place=args.in_place)


def write_kept(args, fmt, sources, pool, ranking, key: str, out: Path) -> list[Output]:
    """Write the kept share in the format's terms; returns what was written (paths, and what each is in words)."""
    kept = np.flatnonzero(ranking.kept)  # in the pool's order
    return list(fmt.write_kept(sources, pool, kept, key, out, overwrite=args.overwrite, in_place=args.in_place))


def replace_file(path: Path, write: Callable[[Path], object]) -> Path:
    """``write(temporary)`` a file beside ``path`` (the same suffix, so that a writer choosing by it chooses alike)
    and rename it over ``path``: the file is whole or absent, never half-written. Returns ``path``."""
    temporary = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
    return path


def _interrupted(done: list[Output], current: str, pending: Sequence[str], rerun: str) -> str:
    wrote = ", ".join(o.path for o in done) or "nothing"
    partly = " (it may be partly written: a robomimic file holds its new key or is unchanged)" if (
        current == "the kept share") else ""
    return (f"interrupted while writing {current}{partly}: wrote {wrote}; not written: "
            f"{', '.join([current, *pending])}; {rerun}")


def write_outputs(out: Path, steps: Sequence[Step], *, rerun: str,
                  then: Callable[[list[Output]], None] | None = None) -> list[Output]:
    """Remove the earlier ranking's files of ``out`` (:data:`RANK_FILES`), run ``steps`` in order (see the module
    docstring for the order rank gives them), then ``then(outputs)`` (rank's printed summary); returns every
    :class:`Output` written.

    On ``KeyboardInterrupt`` (or SIGTERM), one line to stderr says which outputs were written, which step was under
    way and which were not, then ``rerun`` (how to finish), or, during ``then``, that every output was written; the
    interrupt is raised again."""
    from curteach_teaching.sweeps.interrupts import announce, interruption_message

    done: list[Output] = []
    at = [0]  # the step under way, read by the message when an interrupt comes

    def message() -> str:
        names = [name for name, _ in steps]
        if at[0] >= len(names):
            return f"interrupted after every output was written ({', '.join(o.path for o in done)}): nothing is lost"
        return _interrupted(done, names[at[0]], names[at[0] + 1:], rerun)

    with interruption_message(message):
        try:
            for name in RANK_FILES:  # the earlier ranking's: none may describe the selection about to be written
                if (out / name).is_file():
                    (out / name).unlink()
            for index, (_, step) in enumerate(steps):
                at[0] = index
                done += step(list(done))
            at[0] = len(steps)
            if then is not None:
                then(list(done))
        except KeyboardInterrupt:
            announce()
            raise
    return done

