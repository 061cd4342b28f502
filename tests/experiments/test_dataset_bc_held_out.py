"""dataset-bc without an environment: the held-out split (seeded, disjoint, stratified), the held-out NLL, MSE and
accuracy against hand computations, the command on a robomimic-format file, a LeRobot v3 folder and a Minari dataset
read with --env none, and its one-line errors. The robot files are written here, small, in the published layouts."""

from __future__ import annotations

import csv
import json
import math

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("imitation")
pytest.importorskip("h5py")
pytest.importorskip("pyarrow")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets.scores.registry import trained_score  # noqa: E402
from curteach_teaching.experiments.dataset_bc.held_out import (  # noqa: E402
    held_out_metrics,
    held_out_split,
    trusted_episodes,
)

TASKS = ("reach left", "reach right")


def reaching(n: int, seed: int = 0) -> list[dict]:
    """``n`` short 2-D reaching demonstrations (12 to 15 steps): ``pos``/``goal`` ``(T + 1, 2)``, ``actions``
    ``(T, 2)`` = ``clip(2 (goal - pos), -1, 1)`` plus noise, much noisier for every third ("worse")."""
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n):
        quality = "worse" if i % 3 == 2 else "better"
        goal, p = rng.uniform(-1, 1, 2), np.zeros(2)
        positions, actions = [p.copy()], []
        for _ in range(12 + i % 4):
            a = np.clip(2 * (goal - p), -1, 1) + rng.normal(0, 0.5 if quality == "worse" else 0.02, 2)
            p = p + 0.1 * a
            positions.append(p.copy())
            actions.append(a)
        steps = len(actions)
        episodes.append({"pos": np.array(positions), "goal": np.tile(goal, (steps + 1, 1)),
                         "actions": np.array(actions), "rewards": np.zeros(steps), "dones": np.zeros(steps),
                         "quality": quality, "task": TASKS[int(goal[0] > 0)]})
    return episodes


def write_robomimic(path, episodes):
    """robomimic's layout: ``data/demo_<i>`` (``obs``/``next_obs`` with ``object``, ``robot0_eef_pos`` and an image
    key, ``actions``, ``rewards``, ``dones``), filter keys ``mask/better`` and ``mask/worse``."""
    import h5py

    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        for i, ep in enumerate(episodes):
            demo = data.create_group(f"demo_{i}")
            steps = len(ep["actions"])
            demo.attrs["num_samples"] = steps
            for name in ("actions", "rewards", "dones"):
                demo.create_dataset(name, data=ep[name])
            for kind, rows in (("obs", slice(0, steps)), ("next_obs", slice(1, steps + 1))):
                group = demo.create_group(kind)
                group.create_dataset("object", data=ep["goal"][rows])
                group.create_dataset("robot0_eef_pos", data=ep["pos"][rows])
                group.create_dataset("agentview_image", data=np.zeros((steps, 4, 4, 3), dtype=np.uint8))
        data.attrs["total"] = sum(len(ep["actions"]) for ep in episodes)
        data.attrs["env_args"] = json.dumps({"env_name": "PointReach", "type": 1, "env_kwargs": {}})
        for quality in ("better", "worse"):
            f[f"mask/{quality}"] = np.array([f"demo_{i}" for i, ep in enumerate(episodes) if ep["quality"] == quality],
                                            dtype="S")
    return path


def write_lerobot_v3(root, episodes):
    """LeRobot v3.0's layout: ``meta/info.json``, ``meta/episodes/chunk-000/file-000.parquet``,
    ``meta/tasks.parquet``, ``data/chunk-000/file-000.parquet`` (``observation.state`` = position and goal)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    scalar = {"dtype": "int64", "shape": [1], "names": None}
    features = {"observation.state": {"dtype": "float32", "shape": [4], "names": None},
                "action": {"dtype": "float32", "shape": [2], "names": None},
                "timestamp": {"dtype": "float32", "shape": [1], "names": None},
                **{k: scalar for k in ("frame_index", "episode_index", "index", "task_index")}}
    frames = sum(len(ep["actions"]) for ep in episodes)
    (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    (root / "data" / "chunk-000").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps({
        "codebase_version": "v3.0", "fps": 10, "total_episodes": len(episodes), "total_frames": frames,
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", "features": features}))
    rows, table, first = [], {k: [] for k in ("observation.state", "action", "timestamp", "frame_index",
                                              "episode_index", "index", "task_index")}, 0
    for e, ep in enumerate(episodes):
        steps = len(ep["actions"])
        state = np.concatenate([ep["pos"][:steps], ep["goal"][:steps]], axis=1).astype(np.float32)
        table["observation.state"] += state.tolist()
        table["action"] += ep["actions"].astype(np.float32).tolist()
        table["timestamp"] += [t / 10 for t in range(steps)]
        table["frame_index"] += list(range(steps))
        table["episode_index"] += [e] * steps
        table["index"] += list(range(first, first + steps))
        table["task_index"] += [TASKS.index(ep["task"])] * steps
        rows.append({"episode_index": e, "tasks": [ep["task"]], "length": steps, "data/chunk_index": 0,
                     "data/file_index": 0, "dataset_from_index": first, "dataset_to_index": first + steps})
        first += steps
    types = {"observation.state": pa.list_(pa.float32()), "action": pa.list_(pa.float32()), "timestamp": pa.float32()}
    pq.write_table(pa.table({k: pa.array(v, type=types.get(k, pa.int64())) for k, v in table.items()}),
                   root / "data" / "chunk-000" / "file-000.parquet")
    pq.write_table(pa.Table.from_pylist(rows), root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    pq.write_table(pa.table({"task": list(TASKS), "task_index": [0, 1]}), root / "meta" / "tasks.parquet")
    return root


SMALL = ["--runs", "2", "--max-batches", "20", "--eval-every", "10", "--batch-size", "16", "--ensemble-size", "2",
         "--ensemble-batches", "10", "--backend", "serial", "--no-progress", "--no-figures"]


# ----------------------------------------------------------------------------------------------------- the split
def test_the_split_is_seeded_disjoint_and_stratified_by_group():
    groups = ["a"] * 10 + ["b"] * 5 + ["c"] * 2
    split = held_out_split(groups, 0.2, seed=3)
    assert np.array_equal(np.sort(np.concatenate([split.train, split.held_out])), np.arange(17))
    assert not set(split.train.tolist()) & set(split.held_out.tolist())
    held_groups = [groups[i] for i in split.held_out]
    # floor(0.2 n + 1/2): 2 of 10, 1 of 5; at least 1 of 2 (and one left to train on)
    assert (held_groups.count("a"), held_groups.count("b"), held_groups.count("c")) == (2, 1, 1)
    again = held_out_split(groups, 0.2, seed=3)
    assert np.array_equal(again.held_out, split.held_out) and np.array_equal(again.train, split.train)
    others = {tuple(held_out_split(groups, 0.2, seed=s).held_out.tolist()) for s in range(8)}
    assert len(others) > 1  # the seed draws the split
    half = [groups[i] for i in held_out_split(groups, 0.5, seed=3).held_out]
    assert (half.count("a"), half.count("b"), half.count("c")) == (5, 3, 1)  # 0.5 * 5 + 1/2 rounds down to 3


def test_a_trusted_field_restricts_the_held_out_episodes():
    groups = ["a"] * 10
    trusted = np.array([True, False] * 5)
    split = held_out_split(groups, 0.4, seed=0, trusted=trusted)
    assert trusted[split.held_out].all() and len(split.held_out) == 2  # 0.4 of the 5 trusted
    meta = [{"better": bool(t)} for t in trusted]
    assert np.array_equal(trusted_episodes(meta, "better"), trusted)
    with pytest.raises(ValueError, match="no 'okay'"):
        trusted_episodes(meta, "okay")
    with pytest.raises(ValueError, match="boolean"):
        trusted_episodes([{"better": "yes"}], "better")


@pytest.mark.parametrize("groups, fraction, message", [
    (["a"] * 4, 0.0, "holdout must be a fraction in"),
    (["a"] * 4, 1.0, "holdout must be a fraction in"),
    (["a", "b"], 0.5, "no group has 2 episodes"),
])
def test_a_split_that_cannot_be_made_is_refused(groups, fraction, message):
    with pytest.raises(ValueError, match=message):
        held_out_split(groups, fraction, seed=0)


def test_a_group_of_one_episode_trains_only():
    # 'b' has one episode: it trains, and the split of 'a' is the one it would be without 'b' (the same draws)
    alone = held_out_split(["a"] * 5, 0.4, seed=3)
    split = held_out_split(["a", "a", "b", "a", "a", "a"], 0.4, seed=3)
    assert 2 in split.train and len(split.held_out) == 2
    positions = np.array([0, 1, 3, 4, 5])  # where the 'a' episodes are
    assert np.array_equal(split.held_out, positions[alone.held_out])


# ------------------------------------------------------------------------------------------- the scores by hand
def _flat_policy(observation_space, action_space):
    """The BC learner of an MLP whose action head ignores the observation (weights 0): its output is the head's
    bias. Returns ``(learner, its policy, torch)``."""
    import torch as th

    from curteach_teaching.learners.dataset_learner import make_learner

    learner = make_learner("mlp", observation_space, action_space, seed=0, device="cpu", batch_size=8,
                           learning_rate=1e-3, rng=np.random.default_rng(0))
    with th.no_grad():
        learner.policy.action_net.weight.zero_()
    return learner, learner.policy, th


def test_the_held_out_nll_and_mse_are_the_hand_computed_ones():
    obs_space, act_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32)
    learner, policy, th = _flat_policy(obs_space, act_space)
    mu, sigma = np.array([0.25, -0.5]), np.array([0.5, 2.0])
    with th.no_grad():
        policy.action_net.bias.copy_(th.tensor(mu))
        policy.log_std.copy_(th.tensor(np.log(sigma)))
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(5, 3)).astype(np.float32)
    acts = np.array([[0.0, 0.0], [1.0, -1.0], [0.25, -0.5], [-0.5, 0.5], [2.0, 0.0]], dtype=np.float32)  # one outside
    groups = np.array(["x", "x", "y", "y", "y"], dtype=object)
    point = held_out_metrics(learner, obs, acts, groups, act_space, per_group=True)
    # per step: sum over d of (a - mu)^2 / (2 sigma^2) + log sigma + log(2 pi) / 2
    nll = [sum((a[d] - mu[d]) ** 2 / (2 * sigma[d] ** 2) + math.log(sigma[d]) + 0.5 * math.log(2 * math.pi)
               for d in range(2)) for a in acts.astype(np.float64)]
    mse = [float(np.mean((a - mu) ** 2)) for a in acts.astype(np.float64)]
    assert point["nll"] == pytest.approx(np.mean(nll), rel=1e-6)
    assert point["mse"] == pytest.approx(np.mean(mse), rel=1e-6)
    assert point["nll:x"] == pytest.approx(np.mean(nll[:2]), rel=1e-6)
    assert point["nll:y"] == pytest.approx(np.mean(nll[2:]), rel=1e-6)
    assert point["mse:y"] == pytest.approx(np.mean(mse[2:]), rel=1e-6)
    assert "accuracy" not in point


def test_the_held_out_nll_and_accuracy_of_discrete_actions_are_the_hand_computed_ones():
    obs_space, act_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), gym.spaces.Discrete(3)
    learner, policy, th = _flat_policy(obs_space, act_space)
    logits = np.array([1.0, 0.0, -1.0])
    with th.no_grad():
        policy.action_net.bias.copy_(th.tensor(logits))
    acts = np.array([0, 1, 2, 0])
    point = held_out_metrics(learner, np.zeros((4, 2), np.float32), acts, np.array(["g"] * 4, dtype=object),
                             act_space)
    log_softmax = logits - math.log(np.exp(logits).sum())
    assert point["nll"] == pytest.approx(-np.mean(log_softmax[acts]), rel=1e-6)
    assert point["accuracy"] == 0.5  # the greedy action, 0, is right on 2 of 4 steps
    assert set(point) == {"nll", "accuracy"}
    with th.no_grad():
        policy.action_net.bias[0] = float("nan")  # a diverged learner scores NaN, every metric
    point = held_out_metrics(learner, np.zeros((4, 2), np.float32), acts, np.array(["g"] * 4, dtype=object),
                             act_space)
    assert math.isnan(point["nll"]) and math.isnan(point["accuracy"])


# ------------------------------------------------------------------------------------------------- the command
def _runs(out, cell):
    return [json.loads(p.read_text())["data"] for p in sorted((out / "runs" / cell).glob("*.json"))]


def test_dataset_bc_on_a_robomimic_file_reports_held_out_likelihoods_with_paired_statistics(tmp_path, capsys):
    episodes = reaching(9, seed=2)
    path = write_robomimic(tmp_path / "demos.hdf5", episodes)
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", str(path), "--obs-keys", "object,robot0_eef_pos",
            "--curricula", "Agn,Cur-T@select/worse,Cur@select/ensemble", "--keep", "0.7",
            "--bad-field", "worse,not:better",
            "--holdout", "0.3", *SMALL, "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "no environment: scored on 3 held-out episodes" in printed and "paired against Agn" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["metric"] == {"name": "nll", "higher_is_better": False}
    assert report["settings"]["holdout"] == 0.3 and report["settings"]["obs_keys"] == ["object", "robot0_eef_pos"]
    held = report["held_out"]
    ids = held["ids"]["demos"]
    assert held["episodes"] == 3 and held["training_episodes"] == 6 and len(ids) == 3
    stats = report["paired"]["statistics"]["Cur-T+select+worse"]
    assert stats["final"]["pairs"] == 2 and stats["final"]["higher_is_better"] is False
    assert set(stats["scalars"]) == {"mse", "nll@10"}
    # the paired final difference is the runs' final held-out NLL, pair by pair
    agn, cur = _runs(out, "Agn"), _runs(out, "Cur-T+select+worse")
    assert stats["final"]["mean_difference"] == pytest.approx(np.mean([c["curves"]["nll"][-1] - a["curves"]["nll"][-1]
                                                            for c, a in zip(cur, agn)]))
    for run in agn + cur:
        assert run["records"]["batches"]["nll"] == [0, 10, 20] and len(run["curves"]["mse"]) == 3
        assert "return" not in run["curves"]
    assert {run["curves"]["nll"][0] for run in agn + cur} <= {agn[0]["curves"]["nll"][0], agn[1]["curves"]["nll"][0]}
    rows = list(csv.DictReader(open(out / "summary.csv")))
    assert {"mean", "sem", "mse_mean", "mse_sem"} <= set(rows[0]) and "success_mean" not in rows[0]
    # the held-out demonstrations are never trained on: selection.csv lists the training part only
    trained = {int(r["episode_id"]) for r in csv.DictReader(open(out / "selection.csv"))}
    assert trained == set(range(9)) - set(ids)
    assert report["selection_quality"]["field"] == "worse"
    # a further field's table: the episodes not marked better, the same counts as the first's table takes
    further = report["further_selection_quality"]
    assert [q["field"] for q in further] == ["not:better"] and "bad episodes (not:better): " in printed
    better = np.array([ep["quality"] == "better" for ep in episodes])[sorted(set(range(9)) - set(ids))]
    assert further[0]["bad_share"] == pytest.approx(float((~better).mean()))


def test_dataset_bc_on_a_lerobot_v3_folder_reports_per_task_likelihoods(tmp_path, capsys):
    episodes = reaching(12, seed=5)
    assert {ep["task"] for ep in episodes} == set(TASKS)
    root = write_lerobot_v3(tmp_path / "lerobot", episodes)
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", str(root), "--curricula", "Agn,Cur-T@select", "--task-difficulty",
                 "length", "--metric", "mse", "--target", "0.5", *SMALL, "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["metric"] == {"name": "mse", "higher_is_better": False}
    assert report["paired"]["target"] == 0.5
    held = report["held_out"]
    counts = {task: sum(ep["task"] == task for ep in episodes) for task in TASKS}
    assert {task: len(ids) for task, ids in held["ids"].items()} == {
        task: min(max(1, math.floor(0.2 * n + 0.5)), n - 1) for task, n in counts.items()}
    statistics = report["paired"]["statistics"]["Cur-T+select"]
    assert {"nll", "mse:reach left", "mse:reach right", "mse@10"} <= set(statistics["scalars"])
    assert statistics["scalars"]["nll"]["higher_is_better"] is False
    rows = list(csv.DictReader(open(out / "summary.csv")))
    assert {"nll_mean", "nll_mean:reach left", "mse_mean:reach right"} <= set(rows[0])
    run = _runs(out, "Agn")[0]
    assert rows[-1]["curriculum"] == "Cur-T+select"
    assert float([r for r in rows if r["curriculum"] == "Agn"][0]["mean"]) == pytest.approx(
        np.mean([r["curves"]["mse"][0] for r in _runs(out, "Agn")]))
    assert run["extras"]["groups"] == list(held["ids"])


def test_a_lerobot_folders_tasks_are_no_ladder(tmp_path, capsys):
    """The default task score of one LeRobot folder with several tasks is the length, not the tasks' order (its
    groups are tasks, not datasets of a ladder); asked for, 'level' says which group is which level."""
    episodes = reaching(12, seed=5)
    root = write_lerobot_v3(tmp_path / "lerobot", episodes)
    out = tmp_path / "out"
    quick = ["--curricula", "Agn,Cur-T", "--runs", "1", "--max-batches", "10", "--eval-every", "10", "--batch-size",
             "16", "--no-progress", "--no-figures", "--backend", "serial"]
    assert main(["dataset-bc", "--dataset", str(root), *quick, "--out", str(out)]) == 0
    assert "task score level" not in capsys.readouterr().out
    assert json.loads((out / "sweep.json").read_text())["cells"]["Cur-T"]["task"] == "length"
    assert main(["dataset-bc", "--dataset", str(root), *quick, "--task-difficulty", "level",
                 "--out", str(tmp_path / "level")]) == 0
    first, second = dict.fromkeys(ep["task"] for ep in episodes)  # the order of first appearance
    assert f"task score level: 1 {first}, 2 {second} (the datasets' order as read" in capsys.readouterr().out


def test_env_none_scores_held_out_demonstrations_of_a_minari_dataset(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", "test/cartpole-scripted-v0", "--env", "none", "--curricula", "Agn,Cur",
                 "--metric", "accuracy", *SMALL, "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["metric"] == {"name": "accuracy", "higher_is_better": True}
    assert report["settings"]["env_id"] == "none" and report["held_out"]["episodes"] == 1  # 0.2 of 6, rounded
    statistics = report["paired"]["statistics"]["Cur"]
    assert statistics["final"]["higher_is_better"] is True and statistics["scalars"]["nll"]["higher_is_better"] is False
    assert 0 <= _runs(out, "Agn")[0]["curves"]["accuracy"][-1] <= 1


def test_the_training_part_alone_is_prepared_and_scored_by_the_teacher(tmp_path):
    from curteach_teaching.datasets import read_pool
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment

    pool = read_pool(str(write_robomimic(tmp_path / "d.hdf5", reaching(10, seed=1))), obs_keys=["object"])
    experiment = DatasetBCExperiment(curricula=("Agn", "Cur@select/ensemble", "Cur-T/length"), holdout=0.3,
                                     teacher_seed=4, ensemble_size=2, ensemble_batches=5, batch_size=8,
                                     obs_keys=("object",)).prepare(pool)
    split = experiment.data.split
    assert len(split.held_out) == 3 and len(experiment.data) == 7
    assert np.array_equal(experiment.data.task_scores["length"], pool.lengths[split.train])
    held_acts = [pool.trajectories[i].acts for i in split.held_out]
    assert all(np.array_equal(a, t.acts) for a, t in zip(held_acts, experiment.data.held_out))
    fitted = experiment.fit()
    # the ensemble teacher scored the training part alone: the same scores as one fitted on those episodes only
    from curteach_teaching.learners.dataset_learner import LearnerFactory

    teacher = trained_score("ensemble", experiment.score_options()).teacher(experiment.teacher_seed)
    learners = LearnerFactory("auto", pool.observation_space, pool.action_space)
    alone = teacher.scores([pool.trajectories[i] for i in split.train], learners).difficulty
    assert fitted.data.task_scores["ensemble"].shape == (7,)
    assert np.array_equal(fitted.data.task_scores["ensemble"], np.asarray(alone, dtype=np.float64))
    # the teacher's cache is keyed by the policy and the pool's digest (which covers the observations read), and by
    # the digest of the encoded trajectories it fits on
    assert experiment.cache_label() == f"auto|{experiment.digest}"
    # the same seed, the same split
    again = DatasetBCExperiment(holdout=0.3, teacher_seed=4).prepare(pool).data.split
    assert np.array_equal(again.held_out, split.held_out)
    # a trusted subset: only robomimic's "better" demonstrations are held out (half of them), the rest all train
    trusted = DatasetBCExperiment(holdout=0.5, holdout_field="better").prepare(pool).data.split
    better = np.array([meta["better"] for meta in pool.metadata])
    assert better[trusted.held_out].all() and len(trusted.held_out) == math.floor(0.5 * better.sum() + 0.5)


@pytest.mark.parametrize("flags, message", [
    (["--holdout", "0"], "--holdout must be a fraction in (0, 1)"),
    (["--holdout", "1"], "--holdout must be a fraction in (0, 1)"),
    (["--metric", "return"], "no return"),
    (["--metric", "accuracy"], "mse or nll for continuous actions"),
    (["--eval-episodes", "3"], "--eval-episodes"),
    (["--holdout-field", "okay"], "--holdout-field must be a boolean metadata field of every episode; episode 0 of "
                                  "the pool has no 'okay'"),
])
def test_bad_input_without_an_environment_is_one_line_and_exit_code_2(tmp_path, capsys, flags, message):
    path = write_robomimic(tmp_path / "demos.hdf5", reaching(6))
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", str(path), "--obs-keys", "object,robot0_eef_pos", *flags, "--out",
                 str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_too_few_episodes_to_split_is_one_line_and_exit_code_2(tmp_path, capsys):
    episodes = reaching(2)
    for ep, task in zip(episodes, TASKS):
        ep["task"] = task  # two tasks of one episode each: nothing left to train on beside a held-out one
    root = write_lerobot_v3(tmp_path / "lerobot", episodes)
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", str(root), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "too few episodes" in err, err
    assert not out.exists()


def test_holdout_flags_with_an_environment_are_refused(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    for flags in (["--holdout", "0.2"], ["--metric", "nll"]):
        assert main(["dataset-bc", "--dataset", "test/cartpole-scripted-v0", *flags, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and ("--env none" in err), err
    assert not out.exists()
