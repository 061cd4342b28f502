"""What a dataset-bc folder records of its data (``data.json``: a digest per part and per episode), and what a resume
on other data does: data that differ only in what no run reads (rewards) re-key the folder with one line, data that
differ in what runs read are refused naming the part and the episodes, and a folder without the record says it cannot
tell. Never the advice to delete the runs."""

from __future__ import annotations

import hashlib
import json
import shutil
import types

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets import read_pool  # noqa: E402
from curteach_teaching.datasets.data_parts import (  # noqa: E402
    SHORT,
    compare_parts,
    data_parts,
    describe_part,
    same_as_float32,
)
from curteach_teaching.datasets.prepared import pool_digest  # noqa: E402
from curteach_teaching.digests import feed  # noqa: E402

KEYS = ("object", "robot0_eef_pos")


def _pool(rewards, observations):
    """A two-episode pool of plain arrays, as :func:`data_parts` reads it."""
    trajectories = [types.SimpleNamespace(obs=o, acts=np.zeros((len(r), 1), np.float32), rews=r, terminal=True)
                    for r, o in zip(rewards, observations, strict=True)]
    return types.SimpleNamespace(trajectories=trajectories, groups=("a", "b"), episode_ids=np.array([4, 9]),
                                 seeds=(1, None), metadata=({"k": 1}, {}), infos=({}, {}))


def test_the_parts_are_digests_of_each_episode_and_name_what_differs():
    observations = [np.zeros((3, 2)), np.ones((2, 2))]
    pool = _pool([np.array([0.0, 1.0]), np.array([2.0])], observations)
    parts = data_parts(pool)
    # an episode's short digest: feed() of its value, the first SHORT hex digits
    expected = hashlib.sha256()
    feed(expected, observations[1])
    assert parts["parts"]["observations"]["episodes"][1] == expected.hexdigest()[:SHORT]
    expected = hashlib.sha256()
    feed(expected, ("b", 9, None, 1, True))
    assert parts["parts"]["episodes"]["episodes"][1] == expected.hexdigest()[:SHORT]
    assert parts["episodes"] == [["a", 4], ["b", 9]] and parts["reward_sums"] == [1.0, 2.0]
    assert compare_parts(parts, parts) == {}
    changed = data_parts(_pool([np.array([0.0, 1.0]), np.array([2.5])], observations))
    assert compare_parts(parts, changed) == {"rewards": [("b", 9)]}
    # through JSON, as data.json holds it
    assert compare_parts(json.loads(json.dumps(parts)), changed) == {"rewards": [("b", 9)]}
    moved = data_parts(_pool([np.array([0.0, 1.0]), np.array([2.0])], [np.zeros((3, 2)), np.full((2, 2), 2.0)]))
    assert compare_parts(parts, moved) == {"observations": [("b", 9)]}
    # float64's last bit (as another CPU's BLAS leaves Meta-World's gripper opening): equal once cast to float32
    nudged = [np.zeros((3, 2)), np.nextafter(np.ones((2, 2)), 2.0)]
    below = data_parts(_pool([np.array([0.0, 1.0]), np.array([2.0])], nudged))
    assert compare_parts(parts, below) == {"observations": [("b", 9)]}
    assert same_as_float32(parts, below) and not same_as_float32(parts, moved)
    named = [("push", 3), ("push", 7), ("pick", 1), ("pick", 2), ("peg", 5), ("peg", 6), ("peg", 8)]
    assert describe_part("rewards", named, 300) == "rewards (7 of 300 episodes: push 3, 7; pick 1, 2; peg 5 and 2 more)"


def _command(path, out, *more):
    return ["dataset-bc", "--dataset", str(path), "--obs-keys", ",".join(KEYS), "--runs", "1", "--max-batches", "10",
            "--eval-every", "10", "--batch-size", "32", "--backend", "serial", "--no-progress", "--no-figures",
            "--curricula", "Agn,Cur-T@select/length", "--out", str(out), *more]


def _change(path, kind, demo=2):
    with h5py.File(path, "r+") as f:
        if kind == "last bits":  # the next float64 up at one step: the same float32
            for key, row in (("obs", 4), ("next_obs", 3)):
                data = f[f"data/demo_{demo}/{key}/robot0_eef_pos"][()]
                data[row] = np.nextafter(data[row], np.inf)
                f[f"data/demo_{demo}/{key}/robot0_eef_pos"][...] = data
        elif kind == "rewards":
            rewards = f[f"data/demo_{demo}/rewards"][()]
            rewards[0] += 0.25  # one step: the episode's summed rewards move by 0.25
            f[f"data/demo_{demo}/rewards"][...] = rewards
        else:
            for key in ("obs", "next_obs"):
                data = f[f"data/demo_{demo}/{key}/object"]
                data[...] = data[()] + 1.0


@pytest.fixture
def swept(robot_files, tmp_path, capsys):
    """A robomimic file, a sweep on it (2 cells, 1 run each) in ``out``, and the run files' bytes."""
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(9, seed=4))
    out = tmp_path / "out"
    assert main(_command(path, out)) == 0
    capsys.readouterr()
    runs = {p: p.read_bytes() for p in sorted((out / "runs").rglob("run_*.json"))}
    assert len(runs) == 2
    return path, out, runs


def _copy_changed(path, tmp_path, kind):
    (tmp_path / kind).mkdir()
    changed = shutil.copy(path, tmp_path / kind / "mh.hdf5")  # the same name: the same group
    _change(changed, kind)
    return changed


def test_the_folder_records_its_data_part_by_part(swept):
    path, out, _ = swept
    document = json.loads((out / "data.json").read_text())
    pool = read_pool(path, obs_keys=KEYS)
    assert document["digest"] == pool_digest(pool) == json.loads((out / "sweep.json").read_text())["settings"]["digest"]
    assert document["parts"] == data_parts(pool)["parts"] and len(document["episodes"]) == 9


def test_rewards_no_run_reads_are_accepted_and_the_runs_kept(swept, tmp_path, capsys):
    path, out, runs = swept
    changed = _copy_changed(path, tmp_path, "rewards")
    assert main(_command(changed, out)) == 0
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("re-keyed"))
    assert line == (f"re-keyed {out} to the data read: they differ from the sweep's only in rewards (1 of 9 "
                    "episodes: mh 2), an episode's summed rewards by at most 0.25, which no cell of this sweep reads, "
                    "so its runs are runs of these data (2 run files re-keyed)")
    assert "2 runs (0 computed, 2 reused)" in printed
    assert {p: json.loads(p.read_text())["data"] for p in runs} == {p: json.loads(b)["data"] for p, b in runs.items()}
    digest = pool_digest(read_pool(changed, obs_keys=KEYS))
    assert json.loads((out / "sweep.json").read_text())["settings"]["digest"] == digest
    assert json.loads((out / "data.json").read_text())["digest"] == digest
    assert main(_command(changed, out)) == 0  # once
    assert "re-keyed" not in capsys.readouterr().out


def test_rewards_a_cell_reads_are_refused(robot_files, tmp_path, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(9, seed=4))
    argv = _command(path, tmp_path / "out", "--task-difficulty", "return")
    argv[argv.index("--curricula") + 1] = "Agn,Cur-T@select"
    assert main(argv) == 0
    changed = _copy_changed(path, tmp_path, "rewards")
    capsys.readouterr()
    assert main([*argv[:2], str(changed), *argv[3:]]) == 2
    error = capsys.readouterr().err.strip()
    assert "differ from the sweep's in rewards (1 of 9 episodes: mh 2); its runs read the rewards" in error


def test_changed_observations_are_refused_naming_the_part_and_the_episode(swept, tmp_path, capsys):
    path, out, runs = swept
    changed = _copy_changed(path, tmp_path, "observations")
    assert main(_command(changed, out)) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "overwrite" not in error and "delet" not in error
    assert error.endswith(f"{out} holds a sweep of other data: the data differ from the sweep's in observations "
                          "(1 of 9 episodes: mh 2); its runs read the observations, so they are not runs of these "
                          "data; give the data the sweep was made on, or another --out for these data")
    assert {p: p.read_bytes() for p in runs} == runs


def test_a_folder_without_the_record_cannot_tell_which_part(swept, tmp_path, capsys):
    path, out, runs = swept
    (out / "data.json").unlink()
    changed = _copy_changed(path, tmp_path, "rewards")
    assert main(_command(changed, out)) == 2
    error = capsys.readouterr().err.strip()
    assert "records no parts of its data (data.json, written since this version), so it cannot tell which part " \
           "differs; give the data the sweep was made on, or another --out for these data" in error
    assert "overwrite" not in error and {p: p.read_bytes() for p in runs} == runs


def test_the_earlier_digest_upgrade_rekeys_a_cell_the_record_lacks(swept, capsys):
    """The committed Meta-World mixed folder's form: a cell added after its ``sweep.json`` was kept, so the record
    names five cells and the folder holds runs of six, all of the earlier digest."""
    from curteach_teaching.experiments.dataset_bc.upgrade_digest import legacy_pool_digest
    from curteach_teaching.sweeps.results import fingerprint

    path, out, runs = swept
    record = json.loads((out / "sweep.json").read_text())
    old = {**record["settings"], "digest": legacy_pool_digest(read_pool(path, obs_keys=KEYS))}
    for cell, own in record["cells"].items():
        for run in (out / "runs" / cell).glob("run_*.json"):
            document = json.loads(run.read_text())
            run.write_text(json.dumps({**document, "fingerprint": fingerprint({"sweep": old, "cell": own})}))
    del record["cells"]["Cur-T+select+length"]
    (out / "sweep.json").write_text(json.dumps({**record, "settings": old}))
    (out / "data.json").unlink()
    assert main(_command(path, out)) == 0
    printed = capsys.readouterr().out
    assert "(2 run files re-keyed;" in printed and "2 runs (0 computed, 2 reused)" in printed
    assert {p: json.loads(p.read_text())["data"] for p in runs} == {p: json.loads(b)["data"] for p, b in runs.items()}
    assert json.loads((out / "data.json").read_text())["digest"] == pool_digest(read_pool(path, obs_keys=KEYS))


def test_adopt_data_rekeys_a_folder_to_data_proven_to_give_its_runs(swept, tmp_path, capsys):
    """The maintainer's routine: after a recomputation proved the runs, the folder is re-keyed to the data read
    although they differ in a part runs read (here the observations, which these runs do read: the routine trusts
    the proof, not the parts)."""
    from curteach_teaching.experiments.dataset_bc.data_record import adopt_data
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment

    path, out, runs = swept
    changed = _copy_changed(path, tmp_path, "observations")
    pool = read_pool(changed, obs_keys=KEYS)
    experiment = DatasetBCExperiment(curricula=("Agn", "Cur-T@select/length"), task_difficulty="length",
                                     max_batches=10, eval_every=10, batch_size=32, holdout=0.2,
                                     obs_keys=KEYS).prepare(pool)
    line = adopt_data(out, pool, experiment)
    assert line.startswith(f"adopted {out} for the data read (digest ") and "2 run files re-keyed" in line
    assert json.loads((out / "data.json").read_text())["parts"] == data_parts(pool)["parts"]
    assert main(_command(changed, out)) == 0
    assert "2 runs (0 computed, 2 reused)" in capsys.readouterr().out
    assert {p: json.loads(p.read_text())["data"] for p in runs} == {p: json.loads(b)["data"] for p, b in runs.items()}
    with pytest.raises(ValueError, match="other settings than the experiment's"):
        adopt_data(out, pool, DatasetBCExperiment(curricula=("Agn",), max_batches=20, holdout=0.2,
                                                  obs_keys=KEYS).prepare(pool))


def test_observations_equal_as_float32_are_accepted_where_no_run_reads_float64(swept, tmp_path, capsys):
    path, out, runs = swept
    changed = _copy_changed(path, tmp_path, "last bits")
    assert main(_command(changed, out)) == 0
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("re-keyed"))
    assert ("only in observations (equal as float32, the precision the learners read; 1 of 9 episodes: mh 2), which "
            "no cell of this sweep reads") in line
    assert "2 runs (0 computed, 2 reused)" in printed
    assert {p: json.loads(p.read_text())["data"] for p in runs} == {p: json.loads(b)["data"] for p, b in runs.items()}


def test_what_a_sweep_reads_decides_what_may_differ():
    from curteach_teaching.experiments.dataset_bc.data_record import BELOW_FLOAT32, parts_no_run_reads
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment

    with_success = types.SimpleNamespace(has_rewards=True, infos=({"success": np.array([False, True])},))
    without = types.SimpleNamespace(has_rewards=True, infos=({},))

    def unread(pool, *curricula, **settings):
        return parts_no_run_reads(DatasetBCExperiment(curricula=("Agn", *curricula), **settings), pool)

    assert unread(with_success, "Cur-T@select/length") == {"rewards", BELOW_FLOAT32}
    assert unread(with_success, "Cur-T@select/ensemble+100*not:success") == {"rewards", BELOW_FLOAT32}
    assert unread(with_success, "Cur-T@select/return") == {BELOW_FLOAT32}  # the return reads the rewards
    assert unread(with_success, "Cur-T@select/deminf") == {"rewards"}  # DemInf reads float64 observations
    # success off the rewards where the infos have none, in an environment; held-out scoring reports none
    assert unread(without, "Cur-T@select/length") == {BELOW_FLOAT32}
    assert unread(without, "Cur-T@select/length", holdout=0.2) == {"rewards", BELOW_FLOAT32}
    assert unread(with_success, "Cur-T@select/length", policy="tests.plugins:policy") == {"rewards"}
