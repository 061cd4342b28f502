"""BabyAI bot datasets (seeds, noise, workers, Minari round trip, replay) and the vectorised evaluator."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minigrid")
pytest.importorskip("minari")

from curteach_teaching.experiments.dataset_bc.babyai_data import (  # noqa: E402
    HELD_OUT_SEEDS,
    NOISE_STEP_PROBABILITY,
    TRAINING_SEEDS,
    make_policy_env,
    plan_episodes,
    resolve_levels,
    show_progress,
)
from curteach_teaching.experiments.dataset_bc.babyai_minari import (  # noqa: E402
    babyai_trajectories,
    dataset_id,
    episode_seeds,
    load_babyai_dataset,
    replay_episode,
    write_babyai_datasets,
)
from curteach_teaching.rollouts import evaluate_policy, evaluate_policy_serial  # noqa: E402

LEVELS = ("GoToRedBallGrey", "PutNextLocal")
EPISODES = 6


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Batches of a few 7x7 views: more threads only wait on each other (and on other tests' processes)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The same datasets written with 1 and with 2 workers (noise 0.5)."""
    folders = {}
    for workers in (1, 2):
        out = tmp_path_factory.mktemp(f"babyai-w{workers}")
        write_babyai_datasets(out, LEVELS, EPISODES, seed=7, noise=0.5, workers=workers, progress=False)
        folders[workers] = out
    return folders


def _episodes(folder, level):
    dataset = load_babyai_dataset(folder / dataset_id(resolve_levels(level)[0]))
    metadata = list(dataset.storage.get_episode_metadata(dataset.episode_indices))
    return dataset, list(dataset.iterate_episodes()), metadata


def test_levels_resolve_by_id_or_short_name_and_bad_ones_fail_in_one_line():
    assert resolve_levels("GoToLocal, BabyAI-PickupLoc-v0") == ["BabyAI-GoToLocal-v0", "BabyAI-PickupLoc-v0"]
    with pytest.raises(ValueError, match=r"unknown BabyAI level 'GoToMoon'; valid levels: GoToRedBallGrey, ") as error:
        resolve_levels("GoToMoon")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="twice"):
        resolve_levels(["GoToLocal", "BabyAI-GoToLocal-v0"])
    with pytest.raises(ValueError, match="noise"):
        plan_episodes("GoToLocal", 4, seed=0, noise=1.5)


def test_plans_are_seeded_distinct_and_never_use_held_out_seeds():
    plans = plan_episodes(["GoToLocal", "PickupLoc", "PutNextLocal"], 40, seed=3, noise=0.25)
    assert plans == plan_episodes(["GoToLocal", "PickupLoc", "PutNextLocal"], 40, seed=3, noise=0.25)
    assert [p.seed for p in plans] != [p.seed for p in plan_episodes(["GoToLocal", "PickupLoc", "PutNextLocal"],
                                                                      40, seed=4, noise=0.25)]
    seeds = [p.seed for p in plans]
    assert len(set(seeds)) == len(seeds)
    assert all(s in TRAINING_SEEDS and s not in HELD_OUT_SEEDS for s in seeds)
    for level in ("BabyAI-GoToLocal-v0", "BabyAI-PickupLoc-v0"):
        assert sum(p.noisy for p in plans if p.level == level) == 10
    # a level's episodes do not depend on the levels after it
    assert plans[:40] == plan_episodes(["GoToLocal"], 40, seed=3, noise=0.25)


def test_workers_do_not_change_the_datasets(written):
    for level in LEVELS:
        _, one, meta_one = _episodes(written[1], level)
        _, two, meta_two = _episodes(written[2], level)
        assert meta_one == meta_two
        for a, b in zip(one, two):
            assert np.array_equal(a.actions, b.actions) and np.array_equal(a.rewards, b.rewards)
            for key in ("image", "direction"):
                assert np.array_equal(a.observations[key], b.observations[key])
            assert list(a.observations["mission"]) == list(b.observations["mission"])


def test_minari_loads_them_and_recovers_the_level(written, monkeypatch):
    import minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(written[1]))
    dataset = minari.load_dataset(dataset_id("BabyAI-PutNextLocal-v0"))
    assert dataset.total_episodes == EPISODES
    assert isinstance(dataset.spec.observation_space["mission"], gym.spaces.Text)
    assert dataset.recover_environment().spec.id == "BabyAI-PutNextLocal-v0"
    trajectories = babyai_trajectories(dataset)
    assert len(trajectories) == EPISODES
    first = trajectories[0]
    assert first.obs.get("mission").shape == (len(first.acts) + 1, 64) and first.obs.get("mission").dtype == np.int64


def test_replaying_the_stored_actions_from_the_stored_seed_reproduces_each_episode(written):
    for level in LEVELS:
        dataset, episodes, metadata = _episodes(written[1], level)
        env = dataset.recover_environment()
        for episode, seed, meta in zip(episodes, episode_seeds(dataset), metadata):
            replayed, success = replay_episode(env, seed, episode.actions)
            assert np.array_equal(replayed["image"], episode.observations["image"])
            assert np.array_equal(replayed["direction"], episode.observations["direction"])
            assert replayed["mission"] == list(episode.observations["mission"])
            assert success == bool(meta["success"])
            assert int(meta["seed"]) == int(seed)


def test_noise_is_recorded_per_episode_with_the_planned_share(written):
    for level in LEVELS:
        _, episodes, metadata = _episodes(written[1], level)
        assert sum(bool(m["noisy"]) for m in metadata) == round(0.5 * EPISODES)
        for meta in metadata:
            assert meta["level"] == resolve_levels(level)[0]
            if meta["noisy"]:
                assert float(meta["noise_probability"]) == NOISE_STEP_PROBABILITY
                assert float(meta["noise_share"]) == pytest.approx(int(meta["random_actions"]) / meta["total_steps"])
            else:
                assert float(meta["noise_probability"]) == 0.0 and int(meta["random_actions"]) == 0
                assert bool(meta["success"])  # the bot alone solves every level used here


def test_an_existing_output_is_refused_unless_overwrite(written, capfd):
    with pytest.raises(ValueError, match="already exist.*--overwrite"):
        write_babyai_datasets(written[2], ["GoToRedBallGrey"], 2, seed=1, progress=False)
    write_babyai_datasets(written[2], ["PutNextLocal"], 2, seed=1, progress=False, overwrite=True)
    assert capfd.readouterr().out == ""  # no "Sampling rejected" lines
    assert load_babyai_dataset(written[2] / dataset_id("BabyAI-PutNextLocal-v0")).total_episodes == 2
    assert show_progress(None) is False  # pytest's stderr is no terminal


def test_the_vectorised_evaluator_equals_the_plain_loop():
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    policy = BabyAIFiLMPolicy.for_babyai(seed=1)
    seeds = [0, 1, 2, 3]
    for deterministic in (True, False):
        batched = evaluate_policy(policy, lambda: make_policy_env("BabyAI-GoToRedBallGrey-v0"), seeds,
                                  deterministic=deterministic, generator=5, max_envs=3)
        serial = evaluate_policy_serial(policy, lambda: make_policy_env("BabyAI-GoToRedBallGrey-v0"), seeds,
                                        deterministic=deterministic, generator=5)
        for field in ("seeds", "returns", "successes", "lengths"):
            assert np.array_equal(getattr(batched, field), getattr(serial, field)), (deterministic, field)


def test_the_evaluator_is_generic_and_counts_a_positive_terminal_reward_as_success():
    def logits(observations):  # always "right" (2) on FrozenLake: a deterministic walk to the right wall
        return np.tile([0.0, 0.0, 1.0, 0.0], (len(observations), 1))

    def make():
        return gym.make("FrozenLake-v1", is_slippery=False, map_name="4x4")

    greedy = evaluate_policy(logits, make, [0, 1])
    assert greedy.lengths.tolist() == [100, 100] and not greedy.successes.any()  # TimeLimit truncates
    sampled = evaluate_policy(logits, make, range(6), deterministic=False, generator=0)
    again = evaluate_policy_serial(logits, make, range(6), deterministic=False, generator=0)
    assert np.array_equal(sampled.returns, again.returns) and np.array_equal(sampled.successes, sampled.returns > 0)


def test_the_command_writes_datasets_and_names_a_bad_level_in_one_line(tmp_path, capsys):
    from curteach_teaching.cli import main

    out = tmp_path / "babyai"
    assert main(["make-dataset", "babyai", "--levels", "GoToLocal", "--episodes", "2", "--seed", "1",
                 "--workers", "1", "--out", str(out)]) == 0
    assert load_babyai_dataset(out / "babyai-GoToLocal-v0").total_episodes == 2
    assert main(["make-dataset", "babyai", "--levels", "GoToLocal", "--episodes", "2", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["make-dataset", "babyai", "--levels", "Nowhere", "--episodes", "2", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "unknown BabyAI level 'Nowhere'; valid levels: GoToRedBallGrey" in error and error.count("\n") == 1
    assert main(["make-dataset", "tsp", "--episodes", "2", "--out", str(tmp_path / "x.npz")]) == 2
    assert "only apply to make-dataset babyai" in capsys.readouterr().err


def test_a_relative_out_folder_works(tmp_path, monkeypatch):
    # as docs/experiments/babyai.md writes it (--out data/babyai); Minari 0.5.4 failed on a relative root
    from curteach_teaching.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["make-dataset", "babyai", "--levels", "GoToRedBallGrey", "--episodes", "2", "--seed", "1",
                 "--workers", "1", "--no-progress", "--out", "data/babyai"]) == 0
    assert load_babyai_dataset(tmp_path / "data" / "babyai" / "babyai-GoToRedBallGrey-v0").total_episodes == 2
