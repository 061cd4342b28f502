"""Our own demonstrations as Minari datasets: the navigation datasets (`make-dataset --format minari`) and the car's
demonstration pool; Minari itself loads them, and their episodes replay in the recovered environments."""

from __future__ import annotations

import gymnasium as gym
import minari
import numpy as np
import pytest

from curteach_envs.navigation.generate import generate_dataset
from curteach_teaching.datasets import car_episode_pool, navigation_pool, read_pool, task_difficulty, write_pool


def _replay(dataset: minari.MinariDataset) -> int:
    """Replay every episode from its stored reset options in the recovered environment; the number replayed."""
    env = dataset.recover_environment()
    metas = list(dataset.storage.get_episode_metadata(dataset.episode_indices))
    for episode, meta in zip(dataset.iterate_episodes(), metas):
        options = meta["options"]
        obs, _ = env.reset(seed=meta.get("seed"), options=options)
        assert np.array_equal(obs, episode.observations[0])
        for t, action in enumerate(episode.actions):
            obs, reward, terminated, truncated, _ = env.step(int(action))
            assert np.array_equal(obs, episode.observations[t + 1])
            assert reward == episode.rewards[t]
            assert terminated == episode.terminations[t] and truncated == episode.truncations[t]
    return len(metas)


def test_make_dataset_tsp_minari_is_loaded_by_minari_and_replays(tmp_path, monkeypatch, capsys):
    from curteach_teaching.cli import main

    out = tmp_path / "nav"
    argv = ["make-dataset", "tsp", "--split-sizes", "small", "--seed", "3", "--workers", "1", "--no-progress",
            "--format", "minari", "--minari-storage", "arrow", "--out", str(out)]
    assert main(argv) == 0
    assert "curteach/tsp/train-v0" in capsys.readouterr().out
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(out))
    train = minari.load_dataset("curteach/tsp/train-v0")
    assert train.total_episodes == 60 and train.env_spec.id == "TSPTeach-v0"
    assert _replay(train) == 60
    pool = read_pool(out)
    assert pool.group_names == ("curteach/tsp/test-v0", "curteach/tsp/train-v0", "curteach/tsp/val-v0")
    assert set(task_difficulty(pool, "n_goals")) == {2.0, 3.0, 4.0}
    assert np.array_equal(task_difficulty(pool, "reward"), pool.returns)  # the stored optimal reward is the return
    # a second run refuses before generating anything: one line, exit code 2
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().endswith("remove it or choose another --out")
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_shortest_path_layouts_replay_from_their_reset_options(minari_root):
    split = generate_dataset("shortest_path", {"train": 1}, seed=0, workers=1, progress=False)["train"]
    pool = navigation_pool(split, group="sp").select(np.arange(0, split.n_demos, 25))
    assert pool.env_spec.id == "ShortestPathTeach-v0"
    assert pool.seeds == (None,) * len(pool)
    first = pool.metadata[0]
    assert set(first["options"]["task"]) == {"start", "direction", "goals", "muds", "bombs"}
    assert {"task_index", "n_goals", "reward", "num_optimal_paths", "turns", "mud_steps", "reachable"} <= set(first)
    write_pool(pool, "curteach/shortest-path/sample-v0")
    dataset = minari.load_dataset("curteach/shortest-path/sample-v0")
    assert _replay(dataset) == len(pool)
    back = read_pool("curteach/shortest-path/sample-v0")
    assert back.metadata[0] == {**first, "id": 0, "total_steps": len(pool.trajectories[0].acts)}
    assert all(a == b for a, b in zip(pool.trajectories, back.trajectories))


@pytest.mark.parametrize("data_format", ["hdf5", "arrow"])
def test_car_pool_round_trip_and_start_states(data_format):
    import curteach_envs  # noqa: F401
    from curteach_teaching.demonstrations import sample_demonstrations
    from curteach_teaching.planning import hard_value_iteration

    env = gym.make("CarTeach-v0", layout_seed=3)
    mdp = env.unwrapped.tabular()
    demonstrations = sample_demonstrations(mdp, hard_value_iteration(mdp).policy, np.random.default_rng(0),
                                           n_per_start=2)
    pool = car_episode_pool(demonstrations, mdp, env_spec=env.spec)
    assert len(pool) == 80 and pool.trajectories[0].obs.shape == (11,)
    write_pool(pool, f"curteach/car/pool-{data_format}-v0", data_format=data_format)
    back = read_pool(f"curteach/car/pool-{data_format}-v0")
    assert all(a == b for a, b in zip(pool.trajectories, back.trajectories))
    assert [m["task_type"] for m in back.metadata] == [int(mdp.task_of_state[s]) for s in demonstrations.observations[
        :, :, 0].ravel()]
    recovered = back.make_env()
    assert recovered.spec.kwargs["layout_seed"] == 3
    for i in (0, 17, 79):  # the recovered road starts where the episode starts and pays the stored first reward
        obs, _ = recovered.reset(options=back.metadata[i]["options"])
        assert obs == back.trajectories[i].obs[0]
        assert recovered.step(int(back.trajectories[i].acts[0]))[1] == back.trajectories[i].rews[0]


def test_car_pool_of_an_experiment_road_has_no_spec(minari_root):
    from curteach_envs.car import car_tabular, sample_road
    from curteach_teaching.demonstrations import sample_demonstrations

    mdp = car_tabular(sample_road(np.random.default_rng(np.random.SeedSequence(5).spawn(1)[0])))
    uniform = np.full((mdp.n_states, mdp.n_actions), 1.0 / mdp.n_actions)
    pool = car_episode_pool(sample_demonstrations(mdp, uniform, np.random.default_rng(1), n_per_start=1), mdp)
    write_pool(pool, "curteach/car/road-v0")
    back = read_pool("curteach/car/road-v0")
    assert back.env_spec is None
    assert np.array_equal(task_difficulty(back, "return"), -pool.returns)


def test_navigation_env_takes_a_layout_as_reset_options():
    import curteach_envs  # noqa: F401
    from curteach_envs.navigation import ShortestPathTask

    env = gym.make("ShortestPathTeach-v0")
    task = ShortestPathTask(start=0, direction=0, goals=(5,), muds=(1,), bombs=())
    from_object, _ = env.reset(options={"task": task})
    layout = {"start": 0, "direction": 0, "goals": np.array([5]), "muds": [1], "bombs": np.array([], dtype=float)}
    from_layout, _ = env.reset(options={"task": layout})  # lists as HDF5 hands them back
    assert np.array_equal(from_object, from_layout) and env.unwrapped.task == task
    with pytest.raises(ValueError, match=r"unknown task layout keys \['walls'\]; allowed: start, direction, goals"):
        env.reset(options={"task": {**layout, "walls": [3]}})
