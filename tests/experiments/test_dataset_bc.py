"""curteach dataset-bc on a Minari dataset made outside the package (a scripted CartPole controller), the equal
budget, the scales of the preference, the held-out seeds and the command's one-line errors."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.curriculum.batches import FixedStepBatches  # noqa: E402
from curteach_teaching.curriculum.index import DemonstrationIndex  # noqa: E402
from curteach_teaching.datasets.prepared import success_defined  # noqa: E402
from curteach_teaching.experiments.dataset_bc.run import held_out_seeds  # noqa: E402

DATASET = "test/cartpole-scripted-v0"



def test_fixed_step_batches_take_the_same_steps_from_any_selection():
    index = DemonstrationIndex(np.array([3, 5, 2]))  # transitions 0-2, 3-7, 8-9
    batcher = FixedStepBatches(batch_size=4, steps=3)
    rng = np.random.default_rng(0)
    small = batcher.plan(index, np.array([2]), rng)  # 2 transitions, drawn 6 times over
    assert len(small) == 3 and all(b.size == 4 for b in small)
    assert set(np.concatenate(small)) == {8, 9} and np.bincount(np.concatenate(small))[8:].tolist() == [6, 6]
    full = batcher.plan(index, np.array([0, 1, 2]), rng)
    drawn = np.concatenate(full)
    assert drawn.size == 12 and len(np.unique(drawn[:10])) == 10  # one whole pass first, then a new shuffle
    assert batcher.config()["steps_per_epoch"] == 3


def test_held_out_seeds_avoid_the_datasets():
    assert held_out_seeds([0, 2, None, 5], 4).tolist() == [1, 3, 4, 6]
    assert held_out_seeds([], 3).tolist() == [0, 1, 2]


def test_bc_learns_cartpole_and_the_report_holds_paired_statistics(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur,Cur-T", "--task-difficulty", "return",
            "--runs", "2", "--max-batches", "60", "--eval-every", "30", "--eval-episodes", "3", "--backend", "serial",
            "--no-progress", "--no-figures", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "paired against Agn" in printed and "Cur - Agn: final" in printed
    report = json.loads((out / "report.json").read_text())
    assert set(report["paired"]["statistics"]) == {"Cur", "Cur-T"}
    assert report["paired"]["statistics"]["Cur"]["final"]["pairs"] == 2
    assert report["metric"] == {"name": "return", "higher_is_better": True}  # in the environment
    rows = (out / "summary.csv").read_text().splitlines()
    assert rows[0] == "curriculum,batches,mean,sem,n"  # CartPole rewards every step: no success column
    runs = {cell: [json.loads(p.read_text())["data"] for p in sorted((out / "runs" / cell).glob("*.json"))]
            for cell in ("Agn", "Cur", "Cur-T")}
    for files in runs.values():
        assert len(files) == 2
        for data in files:
            assert data["records"]["batches"]["return"] == [0, 30, 60]
            assert data["curves"]["return"][-1] > 60  # a random policy lasts about 22 steps
            assert data["extras"]["steps_per_epoch"] == runs["Agn"][0]["extras"]["steps_per_epoch"]
    # the comparison at the evaluation point in between, pair by pair from the run files
    at_30 = report["paired"]["statistics"]["Cur"]["scalars"]["return@30"]
    pairs = [c["curves"]["return"][1] - a["curves"]["return"][1] for c, a in zip(runs["Cur"], runs["Agn"])]
    assert at_30["mean_difference"] == pytest.approx(np.mean(pairs)) and at_30["pairs"] == 2
    # run i of every cell starts from the same network: the untrained policy's return is the same
    assert {files[0]["curves"]["return"][0] for files in runs.values()} == {runs["Agn"][0]["curves"]["return"][0]}


def test_success_is_reported_only_for_sparse_rewards(cartpole_root, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    from curteach_teaching.datasets import EpisodePool, read_pool

    pool = read_pool(DATASET)
    assert not success_defined(pool)
    from imitation.data.types import TrajectoryWithRew

    sparse = [TrajectoryWithRew(obs=np.zeros((3, 1)), acts=np.zeros(2, dtype=np.int64), infos=None, terminal=True,
                                rews=np.array([0.0, 1.0]))]
    assert success_defined(EpisodePool.from_trajectories(sparse, gym.spaces.Box(-1, 1, (1,)), gym.spaces.Discrete(2)))


@pytest.mark.parametrize("flags, message", [
    (["--dataset", "test/nothing-v0"], "nothing-v0"),
    (["--dataset", DATASET, "--task-difficulty", "no_such_field"], "no_such_field"),
    (["--dataset", DATASET, "--env", "MountainCar-v0"], "MountainCar-v0"),
    (["--dataset", DATASET, "--curricula", "Agn,Omn"], "Omn"),
    (["--dataset", DATASET, "--max-batches", "0"], "--max-batches"),
    (["--dataset", DATASET, "--task-difficulty", "level"], "at least two"),
])
def test_bad_input_is_one_line_and_exit_code_2(cartpole_root, tmp_path, monkeypatch, capsys, flags, message):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    assert main(["dataset-bc", *flags, "--curricula" if "--curricula" not in flags else "--runs",
                 *(["Agn,Cur"] if "--curricula" not in flags else ["1"]), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()
