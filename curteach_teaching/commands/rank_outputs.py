"""What ``curteach rank`` checks before scoring about where its outputs go, and the call that writes the kept share
through the dataset's format (:class:`~curteach_teaching.datasets.formats.base.DatasetFormat`: robomimic's filter key,
LeRobot's ``episodes.json``, a new Minari dataset, or a registered format's own).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["check_out_outside", "check_outputs", "write_kept"]


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


def write_kept(args, fmt, sources, pool, ranking, key: str, out: Path) -> str:
    """Write the kept share in the format's terms; returns what was written, in words."""
    kept = np.flatnonzero(ranking.kept)  # in the pool's order
    return fmt.write_kept(sources, pool, kept, key, out, overwrite=args.overwrite, in_place=args.in_place)
