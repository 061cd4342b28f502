"""``curteach rank`` where a new user tripped: ties at the cut said, a dataset's own filter key replaced said, no
file of an earlier ranking left beside a new one, no output folder inside the dataset, robomimic's own setting
named, and small refusals (an empty --filter-key or --out)."""

from __future__ import annotations

import csv
import json

import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("pyarrow")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

KEYS = "object,robot0_eef_pos"


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("curteach rank: error: ")
    return err


@pytest.fixture
def episodes(robot_files):
    return robot_files.reaching_episodes(9, seed=4)


def test_ties_at_the_cut_and_a_replaced_label_are_said(robot_files, tmp_path, episodes, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    out = tmp_path / "out"
    # 'worse' is 0 for the 6 others: round(0.5 * 9) = 5 of those 6 are kept, by their place in the file
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "worse", "--keep", "0.5",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("note: 6 episodes share the score at the cut (0); 5 of them are kept, those first in the dataset (the "
            "score does not choose among them)") in printed
    assert f'  {path}: mask/curated: robomimic\'s "hdf5_filter_key": "curated" in its config\'s train section\n' \
        in printed
    assert json.loads((out / "rank.json").read_text())["ties_at_cut"] == {"score": 0.0, "episodes": 6, "kept": 5}
    # the file's own label, replaced with --overwrite: said, with what it held; a split of the old key: said too
    with h5py.File(path, "r+") as f:
        f["mask/better_train"] = f["mask/better"][()][:1]
    better = sum(ep["quality"] == "better" for ep in episodes)
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "length", "--keep", "0.5",
                 "--filter-key", "better", "--overwrite", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"replaced mask/better, which listed {better} demonstrations" in printed
    assert "note: mask/better_train were split from the earlier mask/better" in printed


def test_no_file_of_an_earlier_ranking_is_left(robot_files, tmp_path, episodes, capsys):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root), "--score", "length", "--keep", "0.5", "--out", str(out)]) == 0
    assert (out / "episodes.json").is_file()
    rows = list(csv.DictReader(open(out / "scores.csv")))
    assert "kept" in rows[0]
    capsys.readouterr()
    assert main(["rank", "--dataset", str(root), "--score", "return", "--out", str(out)]) == 0  # no --keep
    assert f"removed {out / 'episodes.json'}, the earlier ranking's in this folder" in capsys.readouterr().out
    assert not (out / "episodes.json").exists()
    rows = list(csv.DictReader(open(out / "scores.csv")))
    assert list(rows[0]) == ["episode_id", "name", "group", "length", "score", "rank"]  # nothing is kept: no column
    # a folder that is not rank's is not touched
    other = tmp_path / "other"
    other.mkdir()
    (other / "episodes.json").write_text("[1]\n")
    assert main(["rank", "--dataset", str(root), "--score", "length", "--out", str(other)]) == 0
    assert (other / "episodes.json").read_text() == "[1]\n"


def test_output_folders_refused(robot_files, tmp_path, episodes, capsys):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    assert "--out must not be empty" in _error(capsys, ["rank", "--dataset", str(root), "--score", "length",
                                                        "--out", ""])
    for inside in (root, root / "meta" / "ranked"):
        assert "is inside the dataset's folder" in _error(
            capsys, ["rank", "--dataset", str(root), "--score", "length", "--out", str(inside)])
    assert not (root / "meta" / "ranked").exists() and not (root / "rank.json").exists()
    assert "--filter-key must be letters" in _error(
        capsys, ["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "length", "--keep", "0.5",
                 "--filter-key", "", "--out", str(tmp_path / "out")])


def test_a_folder_of_minari_datasets_gives_one_kept_dataset_each(robot_files, tmp_path, episodes, monkeypatch,
                                                                 capsys):
    from curteach_teaching.datasets import read_pool, read_robomimic, write_pool

    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    pool = read_robomimic(robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes), KEYS.split(","))
    write_pool(pool.select(list(range(5))), "point/reach-v0")
    write_pool(pool.select(list(range(5, 9))), "point/far-v0")
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root / "point"), "--score", "worse", "--keep", "0.67",
                 "--out", str(out)]) == 0
    worse = [ep["quality"] == "worse" for ep in episodes]
    for name, members in (("far", range(5, 9)), ("reach", range(5))):  # each keeps its own non-worse episodes
        kept = read_pool(out / "datasets" / "point" / f"{name}-curated-v0")
        assert len(kept) == sum(not worse[i] for i in members)
        assert set(kept.groups) == {f"point/{name}-curated-v0"} and not any(m["worse"] for m in kept.metadata)
    printed = capsys.readouterr().out
    for name in ("far", "reach"):  # each kept dataset's path, then how to load it
        assert (f"  {out / 'datasets' / 'point' / f'{name}-curated-v0'}: Minari dataset point/{name}-curated-v0: "
                f"minari.load_dataset('point/{name}-curated-v0') with MINARI_DATASETS_PATH={out / 'datasets'}\n"
                ) in printed


def test_a_lerobot_dataset_numbered_other_than_0_to_n_is_warned_of(robot_files, tmp_path, episodes, capsys):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    ids = [3, 4, 5, 7, 8, 10, 11, 12, 14]  # gaps, not from 0: lerobot 0.4+ reads a list of them as rows
    robot_files.renumber_lerobot(root, ids)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root), "--score", "length", "--keep", "0.5", "--out", str(out)]) == 0
    assert (f"warning: {out / 'episodes.json'} lists episode_index values; the 9 episode_index values run 3..14, not "
            "0..8") in capsys.readouterr().out
    assert set(json.loads((out / "episodes.json").read_text())) <= set(ids)


def test_a_folder_of_robomimic_files_gets_a_filter_key_in_each(robot_files, tmp_path, episodes, capsys):
    suite = tmp_path / "libero_suite"  # one file per task, as LIBERO ships them
    suite.mkdir()
    robot_files.write_robomimic(suite / "task_a_demo.hdf5", episodes[:5])
    robot_files.write_robomimic(suite / "task_b_demo.hdf5", episodes[5:])
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(suite), "--obs-keys", KEYS, "--score", "worse", "--keep", "0.67",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    worse = [ep["quality"] == "worse" for ep in episodes]
    for name, members in (("task_a_demo", range(5)), ("task_b_demo", range(5, 9))):
        with h5py.File(suite / f"{name}.hdf5", "r") as f:  # each file lists its own kept demonstrations
            kept = sorted(n.decode() for n in f["mask/curated"][()])
        assert kept == sorted(f"demo_{i - members[0]}" for i in members if not worse[i])
    assert f"rank: 9 episodes of {suite} (robomimic)" in printed
    rows = list(csv.DictReader(open(out / "scores.csv")))
    assert [r["group"] for r in rows] == ["task_a_demo"] * 5 + ["task_b_demo"] * 4
    # the same two files named with a comma: the same ranking; mixing formats is refused in one line
    files = f"{suite / 'task_a_demo.hdf5'},{suite / 'task_b_demo.hdf5'}"
    assert main(["rank", "--dataset", files, "--obs-keys", KEYS, "--score", "worse", "--out", str(out)]) == 0
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    assert "--dataset mixes formats" in _error(capsys, ["rank", "--dataset", f"{files},{root}", "--score", "length",
                                                        "--out", str(out)])


def test_in_place_is_for_a_robomimic_file_kept_share(robot_files, tmp_path, episodes, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    inode = path.stat().st_ino
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "worse", "--keep", "0.67",
                 "--in-place", "--out", str(out)]) == 0
    with h5py.File(path, "r") as f:
        kept = sorted(n.decode() for n in f["mask/curated"][()])
    assert kept == sorted(f"demo_{i}" for i, ep in enumerate(episodes) if ep["quality"] != "worse")
    assert path.stat().st_ino == inode  # written into the file, not a copy moved over it
    assert "give --keep too" in _error(capsys, ["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score",
                                                "worse", "--in-place", "--out", str(out)])
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    assert "--in-place writes a robomimic file's filter key" in _error(
        capsys, ["rank", "--dataset", str(root), "--score", "length", "--keep", "0.5", "--in-place", "--out",
                 str(out)])


def test_per_group_keeps_each_tasks_share(robot_files, tmp_path, episodes, capsys):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root), "--score", "length", "--keep", "0.5", "--per-group",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    lengths = {i: len(ep["actions"]) for i, ep in enumerate(episodes)}
    expected = []
    for task in robot_files.TASKS:  # each task keeps round(0.5 n) of its own shortest
        members = [i for i, ep in enumerate(episodes) if ep["task"] == task]
        ranked = sorted(members, key=lambda i: (lengths[i], i))
        expected += ranked[: max(1, int(0.5 * len(members) + 0.5))]
    assert json.loads((out / "episodes.json").read_text()) == sorted(expected)
    report = json.loads((out / "rank.json").read_text())
    assert report["per_group"] is True and report["length_control"]["kept_by_length_too"] == 1.0
    assert "(--keep 0.5 within each group)" in printed
    assert "give --keep too" in _error(capsys, ["rank", "--dataset", str(root), "--score", "length", "--per-group",
                                                "--out", str(out)])


@pytest.mark.parametrize(("flags", "message"), [
    (["--ensemble-size", "1"], "--ensemble-size must be an integer >= 2; got 1"),
    (["--ensemble-batches", "0"], "--ensemble-batches must be an integer >= 1; got 0"),
    (["--seed", "-1"], "--seed must be an integer >= 0; got -1"),
    (["--score", "ensemble+0*length"], "a weight must be a finite non-zero number"),
])
def test_a_trained_scores_bad_option_is_one_line_before_any_reading(tmp_path, capsys, flags, message):
    missing = tmp_path / "not-there.hdf5"  # never read: the flag is refused first
    assert message in _error(capsys, ["rank", "--dataset", str(missing), *flags, "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
