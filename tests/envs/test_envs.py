"""Every registered curteach environment, Minigrid-style: check_env, seeded determinism, pickling, rendering."""

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import curteach_envs

ENV_IDS = curteach_envs.ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_registered(env_id):
    assert env_id in gym.registry


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def rollout(env, seed, n_steps=60):
    """Observations, rewards and flags of random actions drawn from a seeded action space."""
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    trace = [np.asarray(obs).copy()]
    for _ in range(n_steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        trace.append((np.asarray(obs).copy(), reward, terminated, truncated))
        if terminated or truncated:
            obs, _ = env.reset()
            trace.append(np.asarray(obs).copy())
    return trace


def assert_same_trace(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple):
            np.testing.assert_array_equal(x[0], y[0])
            assert x[1:] == y[1:]
        else:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seeded_rollouts_are_identical(env_id):
    first, second = gym.make(env_id), gym.make(env_id)
    assert_same_trace(rollout(first, 123), rollout(second, 123))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickling(env_id):
    env = gym.make(env_id)
    env.reset(seed=5)
    clone = pickle.loads(pickle.dumps(env))
    assert_same_trace(rollout(env, 9), rollout(clone, 9))


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", ["ansi", "rgb_array"])
def test_render_modes(env_id, mode):
    env = gym.make(env_id, render_mode=mode)
    assert mode in env.metadata["render_modes"]
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(3):
        frame = env.render()
        if mode == "ansi":
            assert isinstance(frame, str) and frame.strip()
        else:
            assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
            assert frame.ndim == 3 and frame.shape[2] == 3 and frame.shape[0] > 0 and frame.shape[1] > 0
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    env.close()


GYMNASIUM_1 = int(gym.__version__.split(".")[0]) >= 1


@pytest.mark.parametrize(
    "code",
    [
        "import gymnasium as gym; env = gym.make('curteach_envs:CarTeach-v0')",
        "import gymnasium as gym, curteach_envs; env = gym.make('CarTeach-v0')",
        pytest.param(
            "import gymnasium as gym; env = gym.make('CarTeach-v0')",
            marks=pytest.mark.skipif(GYMNASIUM_1, reason="Gymnasium 1.x loads no gymnasium.envs entry points"),
        ),
    ],
    ids=["module-prefix", "import-first", "entry-point-alone"],
)
def test_registration_in_a_fresh_interpreter(code):
    """The first two forms work on Gymnasium 0.29 and 1.x; on 0.29, `import gymnasium` alone registers the ids too
    (through the package's `gymnasium.envs` entry point)."""
    import subprocess
    import sys

    code += "; print(env.unwrapped.tabular().n_states)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "801"


# ------------------------------------------------------------------------------------------- package layout and docs

def test_navigation_package_exports_resolve():
    import curteach_envs.navigation as navigation

    for name in navigation.__all__:
        assert getattr(navigation, name) is not None, name
    for name in curteach_envs.__all__:
        assert getattr(curteach_envs, name) is not None, name
    assert curteach_envs.ShortestPathTeachEnv is navigation.ShortestPathTeachEnv
    assert curteach_envs.TSPTeachEnv is navigation.TSPTeachEnv


def test_importing_the_environments_does_not_import_the_teaching_stack():
    """``curteach_envs`` and every submodule need gymnasium, NumPy and SciPy only: no torch, imitation,
    Stable-Baselines3 or teaching layer."""
    import subprocess
    import sys

    code = """
import importlib, pkgutil, sys
import curteach_envs
names = sorted(m.name for m in pkgutil.walk_packages(curteach_envs.__path__, "curteach_envs."))
for name in names:
    importlib.import_module(name)
assert "curteach_envs.navigation.generate" in names and "curteach_envs._util" in names, names
stack = ("torch", "imitation", "stable_baselines3", "curteach_teaching")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in stack)
print(len(names), heavy)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) >= 13 and out[1:] == ["[]"], out


GYMNASIUM_SECTIONS = (
    "## Description",
    "## Action Space",
    "## Observation Space",
    "## Rewards",
    "## Episode End",
    "## Arguments",
)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_env_docstring_has_the_gymnasium_sections(env_id):
    import pydoc

    from curteach_envs.navigation.env import NavigationEnv

    env_class = type(gym.make(env_id).unwrapped)
    text = pydoc.render_doc(env_class, renderer=pydoc.plaintext)  # what help(env) shows
    for cls in (env_class, NavigationEnv):
        doc = cls.__doc__
        positions = [doc.find(section) for section in GYMNASIUM_SECTIONS]
        assert -1 not in positions and positions == sorted(positions), (cls.__name__, positions)
    for section in GYMNASIUM_SECTIONS:
        assert section in text
