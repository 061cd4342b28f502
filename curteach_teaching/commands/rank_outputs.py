"""Where ``curteach rank`` writes the kept share, in each source's own terms, and what it checks before scoring.

* robomimic: a filter key ``mask/NAME`` added to each file (a folder of files, a LIBERO suite: each file gets the key
  listing its own kept demonstrations), by :func:`~curteach_teaching.datasets.robomimic_mask.write_filter_key`;
* LeRobot: ``DIR/episodes.json``, the kept ``episode_index`` values, for ``LeRobotDataset(..., episodes=...)``;
* Minari: a new dataset ``DIR/datasets/<name>-NAME-v0`` per dataset read, with its own environment.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np

from curteach_envs._util import counted

__all__ = ["check_out_outside", "check_outputs", "episode_names", "write_kept"]


def episode_names(pool, kind: str) -> list[str]:
    """``N`` names for ``scores.csv``: robomimic's ``demo_<i>``, else the episode ids."""
    if kind == "robomimic":
        return [str(m["demo"]) for m in pool.metadata]
    return [str(int(e)) for e in pool.episode_ids]


def _filter_keys(path) -> dict:
    """The robomimic file's filter keys, ``name -> demonstration names`` (read before one is replaced)."""
    from curteach_teaching.datasets.robomimic import demo_names, read_filter_keys, require_h5py

    with require_h5py().File(Path(path).expanduser(), "r") as file:
        return read_filter_keys(file, demo_names(file))


def _kept_dataset_ids(pool, key: str) -> dict:
    """``group -> the id of its kept Minari dataset``: one per dataset of the pool (a folder of several datasets
    gives one kept dataset each, with its own environment), ``<name>-KEY-v0``; ``curated/KEY-v0`` for a pool made
    in memory (no name)."""
    return {group: (re.sub(r"-v\d+$", "", group) + f"-{key}-v0") if group else f"curated/{key}-v0"
            for group in pool.group_names}


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


def check_outputs(args, kind: str, pool, key: str, out: Path, files: dict) -> None:
    """Refuse, before any scoring, what the kept subset's output would refuse (``files``: robomimic's ``group ->
    file``)."""
    if args.keep is None:
        if args.filter_key is not None or args.overwrite or args.in_place:
            raise ValueError("--filter-key, --overwrite and --in-place say where the kept share goes: give --keep too")
        return
    if args.in_place and kind != "robomimic":
        raise ValueError("--in-place writes a robomimic file's filter key; this dataset's kept share is a new file")
    from curteach_teaching.datasets.robomimic_mask import check_key_name

    try:
        check_key_name(key)
    except ValueError:
        raise ValueError(f"--filter-key must be letters, digits, '_', '.' or '-'; got {key!r}") from None
    if kind == "robomimic":
        from curteach_teaching.datasets.robomimic_mask import check_filter_key

        for path in files.values():
            check_filter_key(path, key, overwrite=args.overwrite)
    elif kind == "lerobot" and args.filter_key is not None:
        raise ValueError("--filter-key names a robomimic filter key or a Minari dataset; a LeRobot dataset's kept "
                         "episodes go to DIR/episodes.json")
    elif kind == "minari":
        if not pool.has_rewards:
            raise ValueError("the kept episodes are written as a Minari dataset, which needs rewards; this pool has "
                             "none")
        for dataset_id in _kept_dataset_ids(pool, key).values():
            target = out / "datasets" / dataset_id
            if target.exists() and not args.overwrite:
                raise ValueError(f"{target} exists; pass --overwrite to replace it, or choose another --filter-key")


def _write_filter_keys(args, pool, kept: np.ndarray, key: str, files: dict) -> str:
    from curteach_teaching.datasets.robomimic_mask import write_filter_key

    groups, written = np.asarray(pool.groups, dtype=object), []
    for group, path in files.items():
        mine = kept[groups[kept] == group]
        earlier = {k: len(members) for k, members in _filter_keys(path).items()}
        where = f" of {path.name}" if len(files) > 1 else ""
        if mine.size == 0:  # a filter key lists at least one demonstration
            left = f"; its earlier mask/{key} is left as it was" if key in earlier else ""
            print(f"note: no demonstration of {path} is kept: mask/{key} is not written there{left}")
            continue
        write_filter_key(path, key, [pool.metadata[i]["demo"] for i in mine.tolist()], overwrite=args.overwrite,
                         in_place=args.in_place)
        written.append(str(path))
        if key in earlier:  # perhaps the dataset's own label (better, train): say what it held
            print(f"replaced mask/{key}{where}, which listed {counted(earlier[key], 'demonstration')}")
        derived = [f"mask/{k}" for k in (f"{key}_train", f"{key}_valid") if k in earlier]
        if key in earlier and derived:
            print(f"note: {' and '.join(derived)}{where} were split from the earlier mask/{key} and still list its "
                  f"demonstrations; split the new one again (robomimic's split_train_val.py --filter_key {key})")
    return f'mask/{key} in {", ".join(written)} (robomimic: "hdf5_filter_key": "{key}" in its config\'s train section)'


def write_kept(args, kind: str, pool, ranking, key: str, out: Path, files: dict) -> str:
    """Write the kept share in the source's terms; returns what was written, in words."""
    kept = np.flatnonzero(ranking.kept)  # in the pool's order
    if kind == "robomimic":
        return _write_filter_keys(args, pool, kept, key, files)
    if kind == "lerobot":
        path = out / "episodes.json"
        path.write_text(json.dumps([int(pool.episode_ids[i]) for i in kept.tolist()]) + "\n")
        from curteach_teaching.datasets.lerobot import episode_indices_note

        note = episode_indices_note(pool)
        if note:  # lerobot would read the list as rows of its episodes table: other episodes
            print(f"warning: {path} lists episode_index values; {note}", flush=True)
        return f"{path} (LeRobotDataset(..., episodes=json.load(open('{path}'))))"
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
        written.append(dataset_id)
    plural = "s" if len(written) > 1 else ""
    return f"Minari dataset{plural} {', '.join(written)} under {root} (MINARI_DATASETS_PATH={root})"
