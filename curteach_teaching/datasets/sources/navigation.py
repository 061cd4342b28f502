"""``make-dataset shortest-path`` and ``make-dataset tsp``: the navigation task datasets, generated with the
original's procedure (seeded, in parallel).

Two outputs: ``--format npz`` (default), the environments' own one-file format
(:func:`curteach_envs.navigation.dataset.save_dataset`, read by ``curteach nav`` and ``dataset-info``), the one
dataset a source writes without :func:`~curteach_teaching.datasets.writing.write_pool`: it keeps every split, the
task layouts and the optimal-path counts in one file; and ``--format minari``, one Minari dataset per split through
:func:`~curteach_teaching.datasets.navigation.write_navigation_dataset` (so through ``write_pool``). Finished chunks
are kept in ``OUT.chunks/`` until the output is written, so an interrupted command resumes where it stopped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from curteach_teaching.datasets.sources.base import DatasetSource, check_out_folder

__all__ = ["NavigationSource", "ShortestPathSource", "TSPSource"]


def _check_count(flag: str, value, low: int) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
        raise ValueError(f"{flag} must be an integer >= {low}; got {value!r}")


class NavigationSource(DatasetSource):
    """A navigation task family (``kind``: ``"shortest_path"`` or ``"tsp"``)."""

    kind = ""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--split-sizes``, ``--format`` and ``--minari-storage`` (with ``--format minari`` only)."""
        parser.add_argument("--split-sizes", default="paper", choices=["paper", "small"],
                            help="'paper': the original's counts; 'small': a quick set (default: paper)")
        parser.add_argument("--format", choices=["npz", "minari"], default="npz",
                            help="'npz': one file (--out names it); 'minari': one Minari dataset per split, "
                            f"curteach/{self.name}/<split>-v0 under the folder --out (MINARI_DATASETS_PATH=OUT loads "
                            "them by id; docs/datasets.md) (default: npz)")
        parser.add_argument("--minari-storage", choices=["hdf5", "arrow"], default=None,
                            help="Minari's storage format, with --format minari only (default: hdf5)")

    def _chunks(self, args: argparse.Namespace) -> Path:
        return Path(args.out).with_name(Path(args.out).name + ".chunks")

    def check(self, args: argparse.Namespace) -> None:
        """The seed, workers, format and output (a file that is not there, unless ``--overwrite``; a folder that
        holds none of the splits' datasets), before any generation."""
        _check_count("--seed", args.seed, 0)
        _check_count("--workers", args.workers, 1)
        if args.format == "minari":
            from curteach_teaching.datasets.navigation import check_minari_out

            if args.overwrite:
                raise ValueError("--overwrite replaces an --out file (--format npz); remove the Minari datasets to "
                                 "write them again")
            check_minari_out(args.out, self.kind)
            return
        if args.minari_storage is not None:
            raise ValueError("--minari-storage applies to --format minari only (--format npz writes one .npz file)")
        out = Path(args.out)
        if not str(out).strip() or out.name in ("", ".", ".."):
            raise ValueError(f"--out must name a file; got {str(out)!r}")
        if out.exists() and not out.is_file():
            raise ValueError(f"--out {str(out)!r} exists and is not a file")
        if out.exists() and not args.overwrite:
            raise ValueError(f"--out {str(out)!r} exists; pass --overwrite to replace it, or choose another --out")
        check_out_folder(out.parent if str(out.parent) else ".", what=f"--out {str(out)!r}'s folder")

    def generate(self, args: argparse.Namespace, *, progress: bool) -> list[str]:
        """Generate (finished chunks kept in ``OUT.chunks/`` until the output is written) and write the file, or
        one Minari dataset per split; returns their paths."""
        import shutil

        from curteach_envs.navigation.dataset import save_dataset
        from curteach_envs.navigation.generate import generate_dataset

        chunks = self._chunks(args)
        dataset = generate_dataset(self.kind, args.split_sizes, seed=args.seed, workers=args.workers,
                                   progress=progress, chunk_dir=chunks)
        if args.format == "minari":
            from curteach_teaching.datasets.navigation import write_navigation_dataset

            paths = [str(p) for p in write_navigation_dataset(dataset, args.out,
                                                               data_format=args.minari_storage or "hdf5")]
        else:
            paths = [str(save_dataset(dataset, args.out))]
        shutil.rmtree(chunks, ignore_errors=True)
        return paths

    def interrupted(self, args: argparse.Namespace) -> str:
        """How many chunks are kept for the rerun."""
        chunks = self._chunks(args)
        saved = len(list(chunks.glob("chunk-*.npz")))
        return f"interrupted: {saved} chunks saved in {chunks}; run the same command again to resume"


class ShortestPathSource(NavigationSource):
    """``make-dataset shortest-path``."""

    name = "shortest-path"
    summary = "shortest-path navigation tasks with optimal demonstrations (one .npz file, or Minari datasets)"
    kind = "shortest_path"


class TSPSource(NavigationSource):
    """``make-dataset tsp``."""

    name = "tsp"
    summary = "travelling-salesman navigation tasks with optimal demonstrations (one .npz file, or Minari datasets)"
    kind = "tsp"
