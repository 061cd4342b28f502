"""make-dataset metaworld's source: seeded plans, datasets that replay, the same for any --workers, bad input."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("metaworld", reason="Meta-World needs the metaworld extra (Gymnasium >= 1.1): today's stack only")
minari = pytest.importorskip("minari", reason="Minari datasets need the datasets extra")

from curteach_teaching.datasets.sources import metaworld_episodes  # noqa: E402
from curteach_teaching.datasets.sources.base import HELD_OUT_SEEDS, TRAINING_SEEDS  # noqa: E402
from curteach_teaching.datasets.sources.metaworld import MetaWorldSource, dataset_id  # noqa: E402
from curteach_teaching.datasets.sources.metaworld_episodes import plan_episodes  # noqa: E402

QUIET = r".*(A Box observation space (minimum|maximum) value is|Constant\(s\) may be too high)"
TASKS = "reach,push-v3"
EPISODES = 4
MAX_STEPS = 150  # below Meta-World's 500, to keep the test short; some noisy episodes reach it


def parse(*argv: str) -> argparse.Namespace:
    """The flags as make-dataset gives them to a source: its common ones, then the source's own."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--overwrite", action="store_true")
    MetaWorldSource().add_arguments(parser)
    return parser.parse_args(argv)


def flags(out, workers: int) -> list[str]:
    return ["--tasks", TASKS, "--episodes", str(EPISODES), "--seed", "1", "--noise", "0.5", "--noise-share", "0.5",
            "--max-steps", str(MAX_STEPS), "--workers", str(workers), "--out", str(out)]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The same command with --workers 1 and --workers 2 (chunks of 2 episodes, so both processes get work)."""
    out = {}
    patch = pytest.MonkeyPatch()
    patch.setattr(metaworld_episodes, "_CHUNK", 2)
    try:
        for workers in (1, 2):
            folder = tmp_path_factory.mktemp(f"metaworld-{workers}")
            paths = MetaWorldSource().generate(parse(*flags(folder, workers)), progress=False)
            out[workers] = [Path(p) for p in paths]
    finally:
        patch.undo()
    return out


def load(path: Path):
    dataset = minari.MinariDataset(path / "data")
    ids = list(dataset.episode_indices)
    return dataset, list(dataset.iterate_episodes(ids)), list(dataset.storage.get_episode_metadata(ids))


def test_plans_are_seeded_distinct_and_per_task():
    plans = plan_episodes("reach,push", 30, seed=4, noise=1.0, noise_share=0.2)
    assert [p.task for p in plans] == ["reach-v3"] * 30 + ["push-v3"] * 30
    assert plans == plan_episodes(["reach-v3", "push-v3"], 30, seed=4, noise=1.0, noise_share=0.2)
    reach = [p.seed for p in plans[:30]]
    assert len(set(reach)) == 30 and all(s in TRAINING_SEEDS and s not in HELD_OUT_SEEDS for s in reach)
    # a task's episodes do not depend on the other tasks of the command, or their order
    assert plan_episodes("push,reach", 30, seed=4, noise=1.0, noise_share=0.2)[30:] == plans[:30]
    assert plan_episodes("reach", 30, seed=4, noise=1.0, noise_share=0.2) == plans[:30]
    assert plan_episodes("reach", 30, seed=5)[0].seed != reach[0]
    # round(0.2 * 30) = 6 noisy episodes per task, with noise 1.0; the rest clean
    for task_plans in (plans[:30], plans[30:]):
        assert sorted(p.noise for p in task_plans) == [0.0] * 24 + [1.0] * 6
    assert all(p.noise == 0 for p in plan_episodes("reach", 10, seed=4, noise=0.0, noise_share=1.0))
    assert sum(p.noise > 0 for p in plan_episodes("reach", 5, seed=0, noise=0.3, noise_share=0.5)) == 3  # 2.5 up


def test_every_episode_replays_its_observations_and_success(written):
    assert [p.name for p in written[1]] == [dataset_id("reach-v3"), dataset_id("push-v3")]
    assert [p.name for p in written[1]] == ["metaworld-reach-v0", "metaworld-push-v0"]
    for path, task in zip(written[1], ["reach-v3", "push-v3"]):
        dataset, episodes, metadata = load(path)
        assert len(episodes) == EPISODES
        env = dataset.recover_environment()
        assert env.unwrapped.task == task and env.spec.max_episode_steps == MAX_STEPS
        for episode, meta in zip(episodes, metadata):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=QUIET, category=UserWarning)
                observation, _ = env.reset(seed=int(meta["seed"]))
                seen, successes = [observation], [False]
                for action in episode.actions:
                    observation, _, terminated, truncated, info = env.step(action)
                    seen.append(observation)
                    successes.append(info["success"])
            np.testing.assert_array_equal(np.asarray(seen), episode.observations)
            np.testing.assert_array_equal(np.asarray(successes), np.asarray(episode.infos["success"], dtype=bool))
            assert bool(meta["success"]) == any(successes) and meta["task"] == task
            # the episode ends at its first success, or at the limit
            step = int(meta["success_step"])
            if meta["success"]:
                assert step == len(episode.actions) == successes.index(True) and terminated
            else:
                assert step == -1 and len(episode.actions) == MAX_STEPS and truncated
            assert meta["noisy"] == (meta["noise"] == 0.5) and meta["noise"] in (0.0, 0.5)
        assert sum(bool(m["noisy"]) for m in metadata) == EPISODES // 2


def test_the_datasets_are_the_same_for_any_number_of_workers(written):
    for one, two in zip(written[1], written[2], strict=True):
        (_, episodes_1, meta_1), (_, episodes_2, meta_2) = load(one), load(two)
        assert meta_1 == meta_2
        for a, b in zip(episodes_1, episodes_2, strict=True):
            for field in ("observations", "actions", "rewards", "terminations", "truncations"):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_existing_datasets_are_refused_unless_overwritten(written, tmp_path):
    with pytest.raises(ValueError, match="already exist.*pass --overwrite"):
        MetaWorldSource().check(parse(*flags(written[1][0].parent, 1)))
    MetaWorldSource().check(parse(*flags(written[1][0].parent, 1), "--overwrite"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tasks", "reach,pushh"], r"^unknown Meta-World task 'pushh'; tasks: assembly, basketball, .*window-open"),
        (["--tasks", "reach,reach-v3"], r"^Meta-World task 'reach-v3' is given twice$"),
        (["--episodes", "0"], r"^--episodes must be an integer >= 1; got 0$"),
        (["--noise-share", "1.5"], r"^--noise-share must be a number in \[0, 1\]; got 1.5$"),
        (["--noise", "nan"], r"^--noise must be a number in \[0, 10\]; got nan$"),
        (["--max-steps", "501"], r"^--max-steps must be an integer in \[1, 500\]; got 501$"),
        (["--seed", "-1"], r"^--seed must be an integer >= 0; got -1$"),
        (["--workers", "0"], r"^--workers must be an integer >= 1; got 0$"),
        (["--noise-share", "0.4"], r"^--noise-share chooses which episodes are noisy: give --noise too"),
    ],
)
def test_bad_flags_fail_in_one_line_and_write_nothing(tmp_path, extra, message):
    out = tmp_path / "out"
    args = parse("--tasks", "reach", "--episodes", "2", "--out", str(out), *extra)
    for call in (MetaWorldSource().check, lambda a: MetaWorldSource().generate(a, progress=False)):
        with pytest.raises(ValueError, match=message) as error:
            call(args)
        assert "\n" not in str(error.value)
    assert not out.exists()


def test_tasks_and_episodes_are_required(tmp_path):
    with pytest.raises(ValueError, match="^make-dataset metaworld needs --tasks and --episodes$"):
        MetaWorldSource().check(parse("--tasks", "reach", "--out", str(tmp_path)))


def test_read_back_as_one_pool_the_learner_sees_the_state_and_a_one_hot_task_id(written):
    from curteach_teaching.datasets.codecs import codec_for
    from curteach_teaching.datasets.reading import read_pool

    pool = read_pool([str(path) for path in written[1]])  # in ladder order: reach, then push
    assert pool.group_names == ("metaworld-reach-v0", "metaworld-push-v0") and len(pool) == 2 * EPISODES
    assert all(seed in TRAINING_SEEDS for seed in pool.seeds)
    assert [m["task"] for m in pool.metadata] == ["reach-v3"] * EPISODES + ["push-v3"] * EPISODES
    codec = codec_for(pool.observation_space, pool.env_specs)
    assert codec.name == "task-one-hot" and codec.tasks == ("push-v3", "reach-v3")
    converted = codec.trajectories(pool.trajectories, pool.groups)
    for trajectory, group in zip(converted, pool.groups):
        assert trajectory.obs.shape[1] == 41
        np.testing.assert_array_equal(trajectory.obs[:, 39:], [[0, 1]] * len(trajectory.obs) if "reach" in group
                                      else [[1, 0]] * len(trajectory.obs))
