"""The data a sweep names: its digest covers the observations and the episodes' labels, so a dataset whose
observations were rescaled or whose filter keys were swapped is another sweep (its runs are never reused, the
ensemble's cached scores never read); a folder of the earlier digest (actions and rewards only) is re-keyed once."""

from __future__ import annotations

import json
import shutil

import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets import read_pool  # noqa: E402
from curteach_teaching.datasets.prepared import pool_digest  # noqa: E402
from curteach_teaching.datasets.scores.registry import trained_score  # noqa: E402
from curteach_teaching.experiments.dataset_bc.upgrade_digest import legacy_pool_digest  # noqa: E402

KEYS = ("object", "robot0_eef_pos")


def rescale(path, key="object"):
    with h5py.File(path, "r+") as f:
        for demo in f["data"]:
            for kind in ("obs", "next_obs"):
                data = f[f"data/{demo}/{kind}/{key}"]
                data[...] = data[()] * 100 + 5


def swap_masks(path, a="better", b="worse"):
    with h5py.File(path, "r+") as f:
        first, second = f[f"mask/{a}"][()], f[f"mask/{b}"][()]
        del f[f"mask/{a}"], f[f"mask/{b}"]
        f[f"mask/{a}"], f[f"mask/{b}"] = second, first


def test_the_digest_covers_observations_and_labels_not_the_path(robot_files, tmp_path):
    episodes = robot_files.reaching_episodes(9, seed=4)
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    digest, legacy = pool_digest(read_pool(path, obs_keys=KEYS)), legacy_pool_digest(read_pool(path, obs_keys=KEYS))
    moved = tmp_path / "elsewhere" / "mh.hdf5"
    moved.parent.mkdir()
    shutil.copy(path, moved)
    assert pool_digest(read_pool(moved, obs_keys=KEYS)) == digest
    changed_files = []
    for change in (rescale, swap_masks):  # the same name: the file's name is its episodes' group
        (tmp_path / change.__name__).mkdir()
        changed_files.append(shutil.copy(path, tmp_path / change.__name__ / "mh.hdf5"))
        change(changed_files[-1])
    for changed in changed_files:
        pool = read_pool(changed, obs_keys=KEYS)
        assert pool_digest(pool) != digest
        assert legacy_pool_digest(pool) == legacy  # what the earlier digest missed
    assert pool_digest(read_pool(path, obs_keys=("object",))) != digest  # other keys read, other data


def _command(path, out, *more):
    return ["dataset-bc", "--dataset", str(path), "--obs-keys", ",".join(KEYS), "--runs", "1", "--max-batches", "10",
            "--eval-every", "10", "--batch-size", "32", "--backend", "serial", "--no-progress", "--no-figures",
            "--out", str(out), *more]


def test_changed_observations_or_labels_are_another_sweep(robot_files, tmp_path, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(9, seed=4))
    argv = _command(path, tmp_path / "out", "--curricula", "Agn,Cur-T@select/worse", "--holdout-field", "better")
    assert main(argv) == 0
    runs = sorted((tmp_path / "out" / "runs").rglob("run_*.json"))
    before = {p: p.read_bytes() for p in runs}
    # the part each change moves, named with its episodes (the folder's data.json records the parts)
    for change, part in ((rescale, "observations (9 of 9 episodes: mh 0, 1, 2, 3, 4 and 4 more)"),
                         (swap_masks, "metadata (")):
        (tmp_path / change.__name__).mkdir()
        changed = shutil.copy(path, tmp_path / change.__name__ / "mh.hdf5")
        change(changed)
        capsys.readouterr()
        assert main([*argv[:2], str(changed), *argv[3:]]) == 2
        error = capsys.readouterr().err.strip()
        assert f"holds a sweep of other data: the data differ from the sweep's in {part}" in error
        assert "\n" not in error and "overwrite" not in error
        assert error.endswith("give the data the sweep was made on, or another --out for these data")
    assert {p: p.read_bytes() for p in runs} == before  # nothing lost
    assert main(argv) == 0  # the unchanged file still resumes
    assert "2 runs (0 computed, 2 reused)" in capsys.readouterr().out


def _as_earlier(out, pool, experiment):
    """Turn the folder ``out`` of this version into one the earlier digest wrote: ``sweep.json``'s digest, every run
    file's fingerprint and the ensemble's cache name as they were computed then."""
    from curteach_teaching.experiments.dataset_bc.upgrade_digest import legacy_trajectories_digest
    from curteach_teaching.sweeps.results import fingerprint

    record = json.loads((out / "sweep.json").read_text())
    old = {**record["settings"], "digest": legacy_pool_digest(pool)}
    for cell, own in record["cells"].items():
        for path in (out / "runs" / cell).glob("run_*.json"):
            document = json.loads(path.read_text())
            document["fingerprint"] = fingerprint({"sweep": old, "cell": own})
            path.write_text(json.dumps(document))
    (out / "sweep.json").write_text(json.dumps({**record, "settings": old}))
    teacher = trained_score("ensemble", experiment.score_options()).teacher(experiment.teacher_seed)
    label = experiment.cache_label()
    [cached] = (out / "teachers").glob("ensemble-*.npz")
    assert cached == teacher.cache_file(experiment.data.trajectories, out / "teachers", label)
    keys = "|obs=" + ",".join(KEYS)
    cached.rename(teacher.cache_path(out / "teachers", legacy_trajectories_digest(experiment.data.trajectories),
                                     f"{experiment.policy}|{old['digest']}{keys}"))
    return cached


def test_a_folder_of_the_earlier_digest_is_upgraded_once(robot_files, tmp_path, capsys):
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment

    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(9, seed=4))
    out = tmp_path / "out"
    argv = _command(path, out, "--curricula", "Agn,Cur-T@select/ensemble", "--ensemble-size", "2",
                    "--ensemble-batches", "3", "--holdout", "0.3", "--keep", "0.5")
    assert main(argv) == 0
    pool = read_pool(path, obs_keys=KEYS)
    experiment = DatasetBCExperiment(
        digest=pool_digest(pool), curricula=("Agn", "Cur-T@select/ensemble"), task_difficulty="length",
        max_batches=10, eval_every=10, batch_size=32, ensemble_size=2, ensemble_batches=3, holdout=0.3, keep=0.5,
        obs_keys=KEYS).prepare(pool)
    runs = {p: json.loads(p.read_text())["data"] for p in (out / "runs").rglob("run_*.json")}
    cache = _as_earlier(out, pool, experiment)
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (f"upgraded {out}: the data's digest now covers its observations, metadata and step infos, not only its "
            "actions and rewards (2 run files re-keyed, the ensemble teacher's cached scores renamed; the folder "
            "recorded nothing of the observations, so its runs are trusted to be of this data)") in printed
    assert "ensemble teacher ready (read from the cache)" in printed and "2 runs (0 computed, 2 reused)" in printed
    assert cache.is_file() and {p: json.loads(p.read_text())["data"] for p in runs} == runs
    assert json.loads((out / "sweep.json").read_text())["settings"]["digest"] == pool_digest(pool)
    assert main(argv) == 0  # once is enough
    assert "upgraded" not in capsys.readouterr().out
