"""The BabyAI dataset source: seeds, noise, workers, the Minari round trip through write_pool and read_pool, replay,
and ``make-dataset babyai``'s flags."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minigrid")
pytest.importorskip("minari")

from curteach_teaching.datasets import read_pool  # noqa: E402
from curteach_teaching.datasets.sources.babyai import dataset_id, write_babyai_datasets  # noqa: E402
from curteach_teaching.datasets.sources.babyai_bot import (  # noqa: E402
    NOISE_STEP_PROBABILITY,
    plan_episodes,
    replay_episode,
    resolve_levels,
    show_progress,
)
from curteach_teaching.datasets.sources.base import HELD_OUT_SEEDS, TRAINING_SEEDS  # noqa: E402

LEVELS = ("GoToRedBallGrey", "PutNextLocal")
EPISODES = 6


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The same datasets written with 1 and with 2 workers (noise 0.5)."""
    folders = {}
    for workers in (1, 2):
        out = tmp_path_factory.mktemp(f"babyai-w{workers}")
        write_babyai_datasets(out, LEVELS, EPISODES, seed=7, noise=0.5, workers=workers, progress=False)
        folders[workers] = out
    return folders


def _pool(folder, level):
    return read_pool(folder / dataset_id(resolve_levels(level)[0]))


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
        one, two = _pool(written[1], level), _pool(written[2], level)
        assert one.metadata == two.metadata and one.seeds == two.seeds
        for a, b in zip(one.trajectories, two.trajectories, strict=True):
            assert np.array_equal(a.acts, b.acts) and np.array_equal(a.rews, b.rews) and a.terminal == b.terminal
            for key in ("image", "direction", "mission"):
                assert np.array_equal(a.obs.get(key), b.obs.get(key))


def test_minari_loads_them_and_recovers_the_level(written, monkeypatch):
    import minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(written[1]))
    dataset = minari.load_dataset(dataset_id("BabyAI-PutNextLocal-v0"))
    assert dataset.total_episodes == EPISODES
    assert isinstance(dataset.spec.observation_space["mission"], gym.spaces.Text)
    assert dataset.recover_environment().spec.id == "BabyAI-PutNextLocal-v0"
    assert dataset.storage.metadata["requirements"][0].startswith("minigrid==")
    # one reader: read_pool gives the episodes, dataset-bc's codec the policy's view (missions as token ids)
    from curteach_teaching.datasets.codecs import codec_for

    pool = read_pool(dataset_id("BabyAI-PutNextLocal-v0"))
    assert len(pool) == EPISODES and pool.group_names == ("babyai-PutNextLocal-v0",)
    first = codec_for(pool.observation_space).trajectories(pool.trajectories)[0]
    assert first.obs.get("mission").shape == (len(first.acts) + 1, 64) and first.obs.get("mission").dtype == np.int64


def test_replaying_the_stored_actions_from_the_stored_seed_reproduces_each_episode(written):
    for level in LEVELS:
        pool = _pool(written[1], level)
        env = pool.make_env(pool.groups[0])
        for episode, seed, meta in zip(pool.trajectories, pool.seeds, pool.metadata, strict=True):
            replayed, success = replay_episode(env, seed, episode.acts)
            assert np.array_equal(replayed["image"], episode.obs.get("image"))
            assert np.array_equal(replayed["direction"], episode.obs.get("direction"))
            assert replayed["mission"] == list(episode.obs.get("mission"))
            assert success == bool(meta["success"]) == (episode.terminal and episode.rews[-1] > 0)
            assert int(meta["seed"]) == int(seed)


def test_noise_is_recorded_per_episode_with_the_planned_share(written):
    for level in LEVELS:
        metadata = _pool(written[1], level).metadata
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
    assert len(_pool(written[2], "PutNextLocal")) == 2
    assert show_progress(None) is False  # pytest's stderr is no terminal


def test_the_command_writes_datasets_and_names_a_bad_level_in_one_line(tmp_path, capsys):
    from curteach_teaching.cli import main

    out = tmp_path / "babyai"
    assert main(["make-dataset", "babyai", "--levels", "GoToLocal", "--episodes", "2", "--seed", "1",
                 "--workers", "1", "--out", str(out)]) == 0
    assert len(read_pool(out / "babyai-GoToLocal-v0")) == 2
    assert "make-dataset babyai (seed 1) wrote 1 in" in capsys.readouterr().out
    assert main(["make-dataset", "babyai", "--levels", "GoToLocal", "--episodes", "2", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["make-dataset", "babyai", "--levels", "Nowhere", "--episodes", "2", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "unknown BabyAI level 'Nowhere'; valid levels: GoToRedBallGrey" in error and error.count("\n") == 1
    for bad, message in ((["--episodes", "0"], "--episodes must be an integer >= 1"),
                         (["--noise", "2"], "--noise must be a share in [0, 1]; got 2.0"),
                         (["--seed", "-1"], "--seed must be an integer >= 0; got -1"),
                         (["--workers", "0"], "--workers must be an integer >= 1; got 0")):
        argv = ["make-dataset", "babyai", "--levels", "GoToLocal", "--episodes", "2", *bad, "--out",
                str(tmp_path / "n")]
        assert main(argv) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "n").exists()  # checked before any work


def test_a_relative_out_folder_works(tmp_path, monkeypatch):
    # as docs/experiments/babyai.md writes it (--out data/babyai); Minari 0.5.4 failed on a relative root
    from curteach_teaching.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["make-dataset", "babyai", "--levels", "GoToRedBallGrey", "--episodes", "2", "--seed", "1",
                 "--workers", "1", "--no-progress", "--out", "data/babyai"]) == 0
    assert len(read_pool(tmp_path / "data" / "babyai" / "babyai-GoToRedBallGrey-v0")) == 2


def test_arrow_storage_is_written_when_asked(tmp_path):
    # issue 43: --minari-storage arrow used to write HDF5 silently
    from curteach_teaching.cli import main

    out = tmp_path / "arrow"
    assert main(["make-dataset", "babyai", "--levels", "GoToRedBallGrey", "--episodes", "2", "--seed", "1",
                 "--workers", "1", "--no-progress", "--minari-storage", "arrow", "--out", str(out)]) == 0
    data = out / "babyai-GoToRedBallGrey-v0" / "data"
    assert not (data / "main_data.hdf5").exists() and (data / "0").is_dir()  # Arrow: a folder per episode
    assert len(read_pool(out / "babyai-GoToRedBallGrey-v0")) == 2
