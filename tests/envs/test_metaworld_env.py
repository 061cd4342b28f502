"""MetaWorldTask-v0: registration, check_env, the configuration fixed by the reset seed, how episodes end."""

import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("metaworld", reason="Meta-World needs the metaworld extra (Gymnasium >= 1.1): today's stack only")

from curteach_envs.metaworld import (  # noqa: E402
    METAWORLD_ENV_ID,
    MetaWorldTaskEnv,
    metaworld_task_names,
    resolve_task,
    scripted_expert,
)

#: Gymnasium's checker on the declared unbounded observation space, and Meta-World's experts on their own gains
QUIET = r".*(A Box observation space (minimum|maximum) value is|Constant\(s\) may be too high)"


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=QUIET, category=UserWarning)
        yield


def trace(env, seed, actions):
    """Observations, rewards, flags and successes of ``actions`` after ``reset(seed=seed)``."""
    observation, _ = env.reset(seed=seed)
    out = [observation.copy()]
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        out.append((observation.copy(), reward, terminated, truncated, info["success"]))
        if terminated or truncated:
            break
    return out


def assert_same(a, b):
    assert len(a) == len(b)
    np.testing.assert_array_equal(a[0], b[0])
    for x, y in zip(a[1:], b[1:], strict=True):
        np.testing.assert_array_equal(x[0], y[0])
        assert x[1:] == y[1:]


def test_the_id_is_registered_with_a_string_entry_point_and_meta_worlds_time_limit():
    env = gym.make(f"curteach_envs:{METAWORLD_ENV_ID}", task="push")
    assert env.spec.entry_point == "curteach_envs.metaworld:MetaWorldTaskEnv"
    assert env.spec.max_episode_steps == 500 and env.spec.kwargs["task"] == "push"
    assert env.unwrapped.task == "push-v3"
    assert env.observation_space.shape == (39,) and env.action_space.shape == (4,)
    assert env.action_space.dtype == np.float32
    env.close()


def test_check_env():
    from gymnasium.utils.env_checker import check_env

    env = MetaWorldTaskEnv("pick-place")
    check_env(env, skip_render_check=True)
    env.close()


def test_task_names_with_or_without_suffix_and_unknown_ones_listed():
    assert len(metaworld_task_names()) == 50
    assert resolve_task("push") == resolve_task("push-v3") == "push-v3"
    with pytest.raises(ValueError, match=r"unknown Meta-World task 'push-v9'; tasks: assembly, .*reach.*") as error:
        resolve_task("push-v9")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("task", ["pick-place", "door-open"])
def test_a_seed_fixes_the_configuration_and_the_episode(task):
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, size=(40, 4)).astype(np.float32)
    first, second = gym.make(METAWORLD_ENV_ID, task=task), gym.make(METAWORLD_ENV_ID, task=task)
    run = trace(first, 2**20 + 7, actions)
    assert_same(run, trace(second, 2**20 + 7, actions))
    # the same env again after other episodes: the seed, not the history, decides
    trace(first, 5, actions)
    assert_same(run, trace(first, 2**20 + 7, actions))
    # another seed: another configuration (the goal, the last three entries, moves)
    other = trace(first, 2**20 + 8, actions)
    assert not np.array_equal(run[0][-3:], other[0][-3:])


def test_environments_copy_one_compiled_model_and_run_as_a_freshly_compiled_one(monkeypatch):
    from curteach_envs import metaworld as module

    monkeypatch.setattr(module, "_COMPILED_MODELS", module.OrderedDict())
    fresh = MetaWorldTaskEnv("pick-place")  # compiles the XML
    (cached,) = module._COMPILED_MODELS.values()
    copied = MetaWorldTaskEnv("pick-place")  # a copy of that model
    assert len(module._COMPILED_MODELS) == 1 and "_initialize_simulation" not in vars(copied._raw)
    assert copied._raw.model is not cached and copied._raw.model is not fresh._raw.model
    actions = np.random.default_rng(1).uniform(-1, 1, size=(60, 4)).astype(np.float32)
    assert_same(trace(fresh, 3, actions), trace(copied, 3, actions))
    # each environment owns its model (Meta-World writes into it): a write reaches neither the other nor the cache
    copied._raw.model.body_pos[1] += 1.0
    assert not np.array_equal(copied._raw.model.body_pos, fresh._raw.model.body_pos)
    np.testing.assert_array_equal(cached.body_pos, fresh._raw.model.body_pos)
    fresh.close()
    copied.close()


def test_only_the_last_few_compiled_models_are_kept(monkeypatch):
    from curteach_envs import metaworld as module

    monkeypatch.setattr(module, "_COMPILED_MODELS", module.OrderedDict())
    monkeypatch.setattr(module, "_KEPT_MODELS", 2)
    for task in ["reach", "push", "reach", "door-open"]:  # reach used again: push is the least recent
        MetaWorldTaskEnv(task).close()
    kept = [Path(path).name for path, *_ in module._COMPILED_MODELS]
    assert len(kept) == 2 and kept[-1] == Path(MetaWorldTaskEnv("door-open")._raw.fullpath).name
    assert Path(MetaWorldTaskEnv("reach")._raw.fullpath).name in kept


def test_unseeded_resets_continue_the_seeded_stream():
    env = gym.make(METAWORLD_ENV_ID, task="reach")
    env.reset(seed=11)
    a, _ = env.reset()
    env.reset(seed=11)
    b, _ = env.reset()
    np.testing.assert_array_equal(a, b)
    c, _ = env.reset()
    assert not np.array_equal(a[-3:], c[-3:])


def test_the_expert_ends_the_episode_at_its_first_success():
    env = gym.make(METAWORLD_ENV_ID, task="reach")
    expert = scripted_expert("reach")
    observation, info = env.reset(seed=3)
    assert info["success"] is False
    steps = 0
    while True:
        observation, _, terminated, truncated, info = env.step(np.clip(expert.get_action(observation), -1, 1))
        steps += 1
        if terminated or truncated:
            break
    assert terminated and not truncated and info["success"] is True and steps < 200


def test_without_termination_the_episode_runs_past_success_to_the_limit():
    env = gym.make(METAWORLD_ENV_ID, task="reach", terminate_on_success=False, max_episode_steps=150)
    expert = scripted_expert("reach")
    observation, _ = env.reset(seed=3)
    successes, ends = [], []
    for _ in range(150):
        observation, _, terminated, truncated, info = env.step(np.clip(expert.get_action(observation), -1, 1))
        successes.append(info["success"])
        ends.append((terminated, truncated))
    assert any(successes) and ends[-1] == (False, True) and not any(t or u for t, u in ends[:-1])


def test_a_failing_episode_is_truncated_at_the_step_limit():
    env = gym.make(METAWORLD_ENV_ID, task="push", max_episode_steps=7)
    env.reset(seed=1)
    for step in range(7):
        _, _, terminated, truncated, info = env.step(np.zeros(4, dtype=np.float32))
        assert not terminated and not info["success"]
        assert truncated == (step == 6)


@pytest.mark.slow
@pytest.mark.parametrize("task", metaworld_task_names())
def test_every_task_replays_its_expert_episode_from_the_seed(task):
    env = gym.make(METAWORLD_ENV_ID, task=task, max_episode_steps=120)
    expert = scripted_expert(task)
    observation, _ = env.reset(seed=2**20 + 1)
    actions = []
    for _ in range(120):
        actions.append(np.clip(expert.get_action(observation), -1, 1).astype(np.float32))
        observation, _, terminated, truncated, _ = env.step(actions[-1])
        if terminated or truncated:
            break
    again = gym.make(METAWORLD_ENV_ID, task=task, max_episode_steps=120)
    assert_same(trace(env, 2**20 + 1, actions), trace(again, 2**20 + 1, actions))
