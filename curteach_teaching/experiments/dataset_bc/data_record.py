"""What a ``dataset-bc`` folder records of its data (``data.json``), and what a resume on other data does with it.

A sweep's settings name its data by one digest (:func:`~curteach_teaching.datasets.prepared.pool_digest`), which
enters every run's fingerprint. Beside ``sweep.json`` the folder keeps ``data.json``: that digest, the digest of
each part of the data and of each episode's share of it (:func:`~curteach_teaching.datasets.data_parts.data_parts`:
episodes, observations, actions, rewards, metadata, infos) and the digest of the trajectories the ensemble teacher
was fitted on (its cache's key). It enters no fingerprint; it is written when a sweep is created or resumed and the
folder's ``sweep.json`` names the data read.

When the data read differ from those ``sweep.json`` names (and every other setting is the same),
:func:`check_data` compares the recorded parts with the data's:

* the parts that differ are parts no cell of the sweep reads (today: the rewards, where no task score reads them and
  success is read off the step infos): the folder is **re-keyed** to the new digest once (run files, then the
  ensemble's cached scores, then ``sweep.json``, then ``data.json``, each atomically, so an interrupted re-key is
  finished by the next command), with one line naming the part, how many episodes and the largest change of an
  episode's summed rewards. No number of a run changes: no run read what changed.
* a part some cell reads differs: refused, naming the parts and their episodes (group and id);
* the folder records no parts (written before ``data.json``): refused, saying it cannot tell which part differs.

A refusal never offers deleting the runs: they are runs of the data the sweep was made on, which can be given again,
or the new data get another ``--out``. :func:`adopt_data` is the one way to re-key a folder to data of another
digest that a run does read, for a maintainer who has proven by recomputation that the data give the same runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from curteach_envs._util import atomic_write
from curteach_teaching.datasets.data_parts import (
    compare_parts,
    data_parts,
    describe_part,
    reward_change,
    same_as_float32,
)
from curteach_teaching.experiments.dataset_bc.upgrade_digest import rekey_runs, rename_teacher_cache
from curteach_teaching.sweeps.folders import RECORD_FORMAT, RECORD_NAME

__all__ = [
    "BELOW_FLOAT32",
    "DATA_NAME",
    "adopt_data",
    "check_data",
    "data_document",
    "parts_no_run_reads",
    "record_data",
]

DATA_NAME = "data.json"
DATA_FORMAT = "curteach-data-1"
#: the task scores known to read no rewards (the built-ins other than ``return``: lengths, levels, and the trained
#: scores, which fit policies on observations and actions)
_REWARD_FREE = frozenset({"length", "level", "ensemble", "deminf", "policy-loss", "action-likelihood",
                          "action-variance"})
#: the task scores that read the observations as float32 at most (through torch policies), or not at all: not
#: ``deminf``, whose estimators read them as float64
_FLOAT32_READERS = frozenset({"length", "level", "return", "ensemble", "policy-loss", "action-likelihood",
                              "action-variance"})
#: a difference of the observations that float32 does not hold (their float32 casts are equal)
BELOW_FLOAT32 = "observations below float32"


def data_document(pool: Any, experiment: Any) -> dict:
    """``data.json``'s content for ``pool`` as ``experiment`` (prepared on it) reads it."""
    from curteach_teaching.digests import trajectories_digest

    trajectories = "" if experiment.data is None else trajectories_digest(experiment.data.trajectories)
    return {"format": DATA_FORMAT, "digest": experiment.digest, "trajectories": trajectories, **data_parts(pool)}


def _read(path: Path) -> dict | None:
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _recorded_data(out_dir: Path, digest: str) -> dict | None:
    """``data.json`` when it describes the data of ``digest`` (a file of other data, left by an interrupted
    ``--overwrite``, describes nothing here)."""
    document = _read(out_dir / DATA_NAME)
    if document is None or document.get("format") != DATA_FORMAT or document.get("digest") != digest:
        return None
    return document


def record_data(out_dir: str | os.PathLike, document: dict) -> bool:
    """Write ``document`` (:func:`data_document`) as ``out_dir/data.json`` (atomically) when the folder's
    ``sweep.json`` names its digest and the file does not hold it already; whether it was written."""
    out_dir = Path(out_dir)
    record = _read(out_dir / RECORD_NAME)
    try:
        named = record["settings"]["digest"]  # type: ignore[index]
    except (KeyError, TypeError):
        return False
    if named != document["digest"] or _read(out_dir / DATA_NAME) == document:
        return False
    atomic_write(out_dir / DATA_NAME, lambda stream: json.dump(document, stream, separators=(",", ":")))
    return True


def parts_no_run_reads(experiment: Any, pool: Any) -> frozenset:
    """The differences of the data that no cell of ``experiment`` reads: a subset of ``{"rewards",
    BELOW_FLOAT32}``.

    * ``"rewards"``: every task score the cells read is one of the built-ins known to read no rewards (or a metadata
      or info field), no curriculum is a plug-in (``module:attr``, which may read anything) and success is not read
      off the rewards (it is read off the step infos, ``success``/``is_success``, or not reported: held-out
      demonstrations are scored instead of an environment's episodes).
    * :data:`BELOW_FLOAT32`, observations that differ in float64 only (equal once cast to float32): the policy is a
      built-in (its torch network reads float32), no curriculum is a plug-in and every task score reads the
      observations through such a policy or not at all (not ``deminf``).

    The episodes and actions are read by every run; the metadata and infos by fields, success and the report."""
    from curteach_teaching.datasets.scores.registry import TASK_SCORES, score_terms

    if any(":" in experiment.cell_spec(cell).curriculum for cell in experiment.cells):
        return frozenset()
    names = {term.removeprefix("not:") for task in experiment.tasks() for term in score_terms(task)}
    registered = {name for name in names if ":" in name or name in TASK_SCORES.names()}  # the others are fields
    unread = set()
    # return, a plug-in, or a registered score not known to be free of rewards reads them
    rewards_free = registered <= _REWARD_FREE
    if experiment.holdout is None and getattr(pool, "has_rewards", False) and not any(
            key in info for info in pool.infos for key in ("success", "is_success")):
        rewards_free = False  # success may be read off the rewards (prepared.success_defined)
    if rewards_free:
        unread.add("rewards")
    if ":" not in str(experiment.policy) and registered <= _FLOAT32_READERS:
        unread.add(BELOW_FLOAT32)
    return frozenset(unread)


def _rekey(out_dir: Path, record: dict, experiment: Any, document: dict, old_data: str) -> str:
    """Re-key the folder to ``experiment.digest``: run files, the ensemble's cache (from trajectories digest
    ``old_data`` and the recorded digest's label), ``sweep.json``, then ``data.json``. Returns the count's words."""
    old_digest = record["settings"]["digest"]
    count = rekey_runs(out_dir, record, experiment)
    teacher = rename_teacher_cache(out_dir / "teachers", experiment, old_data, f"{experiment.policy}|{old_digest}")
    new_record = {**record, "settings": {**record["settings"], "digest": experiment.digest}}
    atomic_write(out_dir / RECORD_NAME, lambda stream: json.dump(new_record, stream, indent=1))
    record_data(out_dir, document)
    return f"{count} run files re-keyed{teacher}"


def _sweep_record(out_dir: Path) -> dict | None:
    record = _read(out_dir / RECORD_NAME)
    if record is None or record.get("format") != RECORD_FORMAT or not isinstance(record.get("cells"), dict) or \
            not isinstance(record.get("settings"), dict) or not isinstance(record["settings"].get("digest"), str):
        return None
    return record


def check_data(out_dir: str | os.PathLike, pool: Any, experiment: Any, seed: int) -> str:
    """Accept or refuse ``out_dir``'s sweep when the data read differ from the data it names (module docstring).

    Args:
        out_dir: the sweep's folder (after :mod:`~curteach_teaching.experiments.dataset_bc.migrate`'s and
            :mod:`~curteach_teaching.experiments.dataset_bc.upgrade_digest`'s upgrades).
        pool: the pool as read now (the whole pool); experiment: prepared on it; seed: the sweep's seed.

    Returns:
        One line when the folder was re-keyed, else ``""`` (no sweep there, the same data, or a sweep of other
        settings or seed besides, which the sweep's own check names in full).

    Raises:
        ValueError: the data differ in a part some cell reads (the parts and episodes named), or the folder records
            no parts of its data to compare.
    """
    out_dir = Path(out_dir)
    record = _sweep_record(out_dir)
    if record is None or record["settings"]["digest"] == experiment.digest:
        return ""
    recorded = record["settings"]["digest"]
    if record.get("seed") != seed or {**record["settings"], "digest": experiment.digest} != json.loads(
            json.dumps(experiment.settings())):
        return ""
    ways = "give the data the sweep was made on, or another --out for these data"
    old = _recorded_data(out_dir, recorded)
    if old is None:
        raise ValueError(f"{out_dir} holds a sweep of other data (digest {recorded[:12]}… -> {experiment.digest[:12]}…)"
                         f" and records no parts of its data ({DATA_NAME}, written since this version), so it cannot "
                         f"tell which part differs; {ways}")
    document = data_document(pool, experiment)
    try:
        differing = compare_parts(old, document)
    except (KeyError, TypeError, ValueError, IndexError):
        differing = {}
    total = len(document["episodes"])
    if not differing:
        raise ValueError(f"{out_dir} holds a sweep of other data (digest {recorded[:12]}… -> "
                         f"{experiment.digest[:12]}…) and its {DATA_NAME} cannot tell which part differs; {ways}")
    named = "; ".join(describe_part(part, episodes, total) for part, episodes in differing.items())
    unread = parts_no_run_reads(experiment, pool)
    accepted = {"rewards"} & unread
    if BELOW_FLOAT32 in unread and same_as_float32(old, document):
        accepted.add("observations")
        named = named.replace("observations (", "observations (equal as float32, the precision the learners read; ")
    if not set(differing) <= accepted:
        read = [part for part in differing if part not in accepted]
        raise ValueError(f"{out_dir} holds a sweep of other data: the data differ from the sweep's in {named}; its "
                         f"runs read the {' and '.join(read)}, so they are not runs of these data; {ways}")
    size = reward_change(old, document) if "rewards" in differing else None
    sized = "" if size is None else f", an episode's summed rewards by at most {size:.3g}"
    done = _rekey(out_dir, record, experiment, document, old.get("trajectories", ""))
    return (f"re-keyed {out_dir} to the data read: they differ from the sweep's only in {named}{sized}, which no "
            f"cell of this sweep reads, so its runs are runs of these data ({done})")


def adopt_data(out_dir: str | os.PathLike, pool: Any, experiment: Any) -> str:
    """Re-key a folder whose ``sweep.json`` names data of a digest nothing reproduces to ``pool``'s digest and
    record ``pool``'s parts, whatever part differs.

    Only for a maintainer, and only after the runs were verified by recomputation: a run of every cell recomputed on
    ``pool`` gave the committed run file's records, and a trained teacher refitted on it gave the cached scores.
    The data are then those the runs were made on, in all a run reads; this says so in the folder. Everything is
    written atomically in the order of :func:`check_data`'s re-key: run files (those of the settings ``sweep.json``
    records, for its cells and ``experiment``'s), the ensemble's cache (from either earlier key: the trajectories'
    current digest or the earlier one of actions alone), ``sweep.json``, ``data.json``.

    Args:
        out_dir: the folder; pool: the data, read as the sweep reads them; experiment: the sweep's experiment,
            prepared on ``pool`` (its settings other than the digest are the recorded ones).

    Returns:
        One line of what was done.

    Raises:
        ValueError: no sweep there, or one whose settings other than the digest differ from ``experiment``'s.
    """
    from curteach_teaching.digests import trajectories_digest
    from curteach_teaching.experiments.dataset_bc.upgrade_digest import legacy_trajectories_digest

    out_dir = Path(out_dir)
    record = _sweep_record(out_dir)
    if record is None:
        raise ValueError(f"{out_dir} holds no sweep.json of a dataset-bc sweep")
    if {**record["settings"], "digest": experiment.digest} != json.loads(json.dumps(experiment.settings())):
        raise ValueError(f"{out_dir}'s sweep has other settings than the experiment's, not only another digest")
    document = data_document(pool, experiment)
    old_digest = record["settings"]["digest"]
    trajectories = experiment.data.trajectories
    keys = "" if experiment.obs_keys is None else "|obs=" + ",".join(experiment.obs_keys)
    # the earlier cache key (actions alone, the observation keys in the label) first, then the current form's
    teacher = rename_teacher_cache(out_dir / "teachers", experiment, legacy_trajectories_digest(trajectories),
                                   f"{experiment.policy}|{old_digest}{keys}")
    done = _rekey(out_dir, record, experiment, document, trajectories_digest(trajectories))
    return (f"adopted {out_dir} for the data read (digest {old_digest[:12]}… -> {experiment.digest[:12]}…: "
            f"{done}{teacher}); its runs were verified by recomputation on these data")
