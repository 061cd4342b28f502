"""``curteach rank`` on a robomimic file, a LeRobot folder and a Minari dataset written by the tests: the kept share
in each source's own terms, the scores, the length-only control, and bad input refused in one line with the file
unchanged."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("pyarrow")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

KEYS = "object,robot0_eef_pos"


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _datasets_except_mask(path, key):
    with h5py.File(path, "r") as f:
        found = {}
        f.visititems(lambda name, item: found.__setitem__(name, (
            item[()].tolist() if isinstance(item, h5py.Dataset) else None, dict(item.attrs))) if name != key else None)
        return {k: (v[0], {a: np.asarray(b).tolist() for a, b in v[1].items()}) for k, v in found.items()}


@pytest.fixture
def episodes(robot_files):
    return robot_files.reaching_episodes(9, seed=4)


def test_robomimic_filter_key(robot_files, tmp_path, episodes, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    before = _datasets_except_mask(path, "mask/curated")
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "worse", "--keep", "0.67",
                 "--filter-key", "curated", "--group-field", "better,okay,worse", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    with h5py.File(path, "r") as f:
        kept = sorted(n.decode() for n in f["mask/curated"][()])
    assert kept == sorted(f"demo_{i}" for i, ep in enumerate(episodes) if ep["quality"] != "worse")
    assert _datasets_except_mask(path, "mask/curated") == before
    rows = list(csv.DictReader(open(out / "scores.csv")))
    assert [r["name"] for r in rows] == [f"demo_{i}" for i in range(9)]
    assert [r["group"] for r in rows] == [ep["quality"] for ep in episodes]
    assert [int(r["kept"]) for r in rows] == [int(ep["quality"] != "worse") for ep in episodes]
    assert [int(r["length"]) for r in rows] == [len(ep["actions"]) for ep in episodes]
    report = json.loads((out / "rank.json").read_text())
    assert report["kept"] == 6 and report["groups"]["worse"] == {"episodes": 3, "kept": 0, "mean_score": 1.0}
    assert list(report["groups"]) == ["better", "okay", "worse"]
    from curteach_teaching.datasets.curation import spearman

    worse = [float(ep["quality"] == "worse") for ep in episodes]
    expected = spearman(worse, [len(ep["actions"]) for ep in episodes])
    assert report["length_control"]["spearman_length"] == pytest.approx(expected)
    assert f"length-only control: Spearman correlation of the score with episode length {expected:+.3f}" in printed
    assert (out / "scores.png").stat().st_size > 0
    # again: refused without --overwrite, file unchanged; replaced with it
    digest = sha256(path)
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "length", "--keep", "0.5",
                 "--out", str(out)]) == 2
    assert "already has the filter key mask/curated; pass --overwrite" in capsys.readouterr().err
    assert sha256(path) == digest
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "length", "--keep", "0.5",
                 "--overwrite", "--out", str(out)]) == 0
    with h5py.File(path, "r") as f:
        assert len(f["mask/curated"]) == 5


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("curteach rank: error: ")
    return err


def test_robomimic_bad_input_exit_2_file_unchanged(robot_files, tmp_path, episodes, capsys, monkeypatch):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    digest = sha256(path)
    base = ["rank", "--dataset", str(path), "--score", "length", "--out", str(tmp_path / "out")]
    assert "image observation keys agentview_image" in _one_line_error(capsys, [*base, "--keep", "0.5"])
    assert "no observation key 'cube'" in _one_line_error(capsys, [*base, "--obs-keys", "cube", "--keep", "0.5"])
    assert "--keep must be a fraction" in _one_line_error(capsys, [*base, "--obs-keys", KEYS, "--keep", "0"])
    assert "already has the filter key mask/worse" in _one_line_error(
        capsys, [*base, "--obs-keys", KEYS, "--keep", "0.5", "--filter-key", "worse"])
    assert "give --keep too" in _one_line_error(capsys, [*base, "--obs-keys", KEYS, "--filter-key", "x"])
    assert "no task score 'speed'" in _one_line_error(
        capsys, [*base, "--obs-keys", KEYS, "--score", "speed"])
    assert "ensemble fit must be one of sequential, batched; got 'fast'" in _one_line_error(
        capsys, [*base, "--obs-keys", KEYS, "--score", "ensemble", "--ensemble-fit", "fast"])
    os.chmod(path, 0o444)
    try:
        assert "is read-only" in _one_line_error(capsys, [*base, "--obs-keys", KEYS, "--keep", "0.5"])
    finally:
        os.chmod(path, 0o644)
    assert not (tmp_path / "out").exists()  # refused before anything was written
    from curteach_teaching.datasets.formats import robomimic_mask

    def full_disk(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(robomimic_mask, "_verify", full_disk)
    assert "No space left on device; the file is unchanged" in _one_line_error(
        capsys, [*base, "--obs-keys", KEYS, "--keep", "0.5"])

    def interrupt(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(robomimic_mask, "_verify", interrupt)
    assert main([*base, "--obs-keys", KEYS, "--keep", "0.5"]) == 130
    assert sha256(path) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mh.hdf5", "out"]


def test_lerobot_episodes_json(robot_files, tmp_path, episodes, capsys):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root), "--score", "length", "--keep", "0.5", "--out", str(out)]) == 0
    lengths = np.array([len(ep["actions"]) for ep in episodes])
    kept = json.loads((out / "episodes.json").read_text())
    assert kept == sorted(np.argsort(lengths, kind="stable")[:5].tolist())  # round(4.5) = 5, shortest first
    report = json.loads((out / "rank.json").read_text())
    assert report["length_control"] == {"spearman_length": pytest.approx(1.0), "kept_by_length_too": 1.0}
    assert set(report["groups"]) == set(robot_files.TASKS) and (out / "scores.png").is_file()
    assert "--filter-key names a robomimic filter key" in _one_line_error(
        capsys, ["rank", "--dataset", str(root), "--keep", "0.5", "--filter-key", "x", "--out", str(out)])
    assert "image/video keys observation.images.top" in _one_line_error(
        capsys, ["rank", "--dataset", str(root), "--obs-keys", "observation.images.top", "--out", str(out)])


def test_minari_kept_dataset(robot_files, tmp_path, episodes, monkeypatch, capsys):
    from curteach_teaching.datasets import read_pool, read_robomimic, write_pool

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    pool = read_robomimic(robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes), KEYS.split(","))
    write_pool(pool, "point/reach-v0")
    out = tmp_path / "out"
    argv = ["rank", "--dataset", "point/reach-v0", "--score", "worse", "--keep", "0.67", "--out", str(out)]
    assert main(argv) == 0
    kept = read_pool(out / "datasets" / "point" / "reach-curated-v0")
    assert len(kept) == 6 and not any(m["worse"] for m in kept.metadata)
    assert "exists; pass --overwrite" in _one_line_error(capsys, argv)
    assert main([*argv[:-2], "--keep", "0.34", "--overwrite", "--out", str(out)]) == 0
    assert len(read_pool(out / "datasets" / "point" / "reach-curated-v0")) == 3


@pytest.mark.slow
def test_ensemble_drops_mostly_worse(robot_files, tmp_path, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(30, seed=0))
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "ensemble", "--keep", "0.67",
                 "--filter-key", "curated", "--group-field", "better,okay,worse", "--ensemble-size", "3",
                 "--ensemble-batches", "200", "--out", str(out), "--no-progress"]) == 0
    report = json.loads((out / "rank.json").read_text())
    assert report["ensemble"]["fit"] == "batched"  # rank's default: the members as one batched model
    dropped = {g: row["episodes"] - row["kept"] for g, row in report["groups"].items()}
    assert sum(dropped.values()) == 10 and dropped["worse"] >= 8, dropped
    assert report["length_control"]["spearman_length"] is not None
    with h5py.File(path, "r") as f:
        assert len(f["mask/curated"]) == 20


def test_ensemble_path_box_and_discrete_actions(robot_files, tmp_path, episodes, monkeypatch, capsys):
    """The ensemble's plumbing with a tiny budget: a Gaussian MLP for a robomimic file's Box actions, dataset-bc's
    policy for a Minari dataset's Discrete ones; the scores are cached in DIR/teachers."""
    from gymnasium import spaces
    from imitation.data.types import TrajectoryWithRew

    from curteach_teaching.datasets import EpisodePool, read_pool, write_pool

    tiny = ["--score", "ensemble", "--ensemble-size", "2", "--ensemble-batches", "3", "--no-progress"]
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    out = tmp_path / "box"
    capsys.readouterr()
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, *tiny, "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()  # said without a bar too: a batch log is not silent for minutes
    assert printed[0] == f"ensemble teacher: 2 BC policies x 3 steps (cached in {out / 'teachers'})"
    assert printed[1].startswith("ensemble teacher ready (fitted in ")
    scores = [float(r["score"]) for r in csv.DictReader(open(out / "scores.csv"))]
    assert len(scores) == 9 and np.isfinite(scores).all() and len(set(scores)) > 1
    assert len(list((out / "teachers").glob("ensemble-*.npz"))) == 1
    # the same file with other observations: fitted again, not read from the cache (its key covers them)
    changed = tmp_path / "changed" / "mh.hdf5"
    changed.parent.mkdir()
    robot_files.write_robomimic(changed, [{**ep, "goal": ep["goal"] * 10} for ep in episodes])
    assert main(["rank", "--dataset", str(changed), "--obs-keys", KEYS, *tiny, "--out", str(out)]) == 0
    assert "ensemble teacher ready (fitted in " in capsys.readouterr().out
    assert len(list((out / "teachers").glob("ensemble-*.npz"))) == 2
    # other observation keys are other scores: not the cached ones (the cache's key covers the observations read)
    assert main(["rank", "--dataset", str(path), "--obs-keys", "object", *tiny, "--out", str(out)]) == 0
    assert len(list((out / "teachers").glob("ensemble-*.npz"))) == 3
    # a sum: the ensemble's ranking with every 'worse' demonstration last, from the cached ensemble, by hand
    summed = ["--score", "ensemble+100*worse", *tiny[2:]]
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, *summed, "--keep", "0.67", "--out", str(out)]) == 0
    worse = np.array([ep["quality"] == "worse" for ep in episodes], dtype=float)
    by_hand = (np.array(scores) - np.mean(scores)) / np.std(scores) + 100 * (worse - worse.mean()) / worse.std()
    rows = list(csv.DictReader(open(out / "scores.csv")))
    np.testing.assert_allclose([float(r["score"]) for r in rows], by_hand, rtol=1e-9)
    assert [int(r["kept"]) for r in rows] == [int(not w) for w in worse]
    assert len(list((out / "teachers").glob("ensemble-*.npz"))) == 3  # read from the cache
    # a bad term is refused before the ensemble trains (other keys would be another fit)
    assert "no episode has a field 'shiny'" in _one_line_error(
        capsys, ["rank", "--dataset", str(path), "--obs-keys", "robot0_eef_pos", "--score", "ensemble+not:shiny",
                 *tiny[2:], "--out", str(out)])
    assert len(list((out / "teachers").glob("ensemble-*.npz"))) == 3
    assert "policy 'cnn' needs image observations" in _one_line_error(
        capsys, ["rank", "--dataset", str(path), "--obs-keys", KEYS, *tiny, "--policy", "cnn", "--out", str(out)])

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    rng = np.random.default_rng(0)
    trajectories = [TrajectoryWithRew(obs=rng.normal(size=(n + 1, 3)).astype(np.float32),
                                      acts=rng.integers(0, 2, size=n), infos=None, terminal=True, rews=np.ones(n))
                    for n in (3, 5, 4, 6)]
    write_pool(EpisodePool.from_trajectories(trajectories, spaces.Box(-10, 10, (3,), np.float32), spaces.Discrete(2),
                                             group="toy/discrete-v0"), "toy/discrete-v0")
    out = tmp_path / "discrete"
    assert main(["rank", "--dataset", "toy/discrete-v0", *tiny, "--keep", "0.5", "--out", str(out)]) == 0
    assert len(read_pool(out / "datasets" / "toy" / "discrete-curated-v0")) == 2
