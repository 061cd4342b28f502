"""One Meta-World task whose configuration is a pure function of the reset seed: ``MetaWorldTask-v0``.

Meta-World's own environments (``gym.make("Meta-World/MT1", env_name=...)``) pick the task configuration (object and
goal positions, Meta-World's ``rand_vec``) from a pool of 50 before the reset seed is applied, so ``reset(seed=s)``
twice gives two different goals and a stored episode cannot be replayed from its seed. :class:`MetaWorldTaskEnv`
wraps the task's raw ``SawyerXYZEnv`` and draws the configuration at every seeded reset from the environment's own
``np_random`` (Meta-World's ``seeded_rand_vec`` mode: uniform over the task's reset space, with the task's own
rejection of configurations that are too close, exactly as Meta-World samples its 50), so ``reset(seed=s)`` always
gives the same configuration, and a seed and the actions taken reproduce an episode.

* Observations: Meta-World's 39-d state (hand, gripper, objects, the previous frame's hand/gripper/objects, and the
  goal, observable as in Meta-World's multi-task benchmarks), ``float64``, declared unbounded: Meta-World's own
  bounds are not met by its reset observations.
* Actions: ``Box(-1, 1, (4,), float32)`` (hand displacement and gripper effort).
* Reward: Meta-World's v2 reward; ``info["success"]`` at every step.
* End: ``terminated`` at the first step whose ``info["success"]`` is true (``terminate_on_success=True``, the default,
  as in Meta-World's evaluation), else truncated by the registered ``TimeLimit`` of 500 steps (Meta-World's horizon;
  ``gym.make(..., max_episode_steps=N)`` for another).

The environment needs the ``metaworld`` package (``pip install 'curteach[metaworld]'``, Gymnasium >= 1.1); this
module imports it only when an environment is built, so registering the id costs nothing where it is missing.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "METAWORLD_ENV_ID",
    "MetaWorldTaskEnv",
    "metaworld_task_names",
    "resolve_task",
    "scripted_expert",
]

#: the Gymnasium id (registered by :func:`curteach_envs.register_envs`)
METAWORLD_ENV_ID = "MetaWorldTask-v0"
#: Meta-World's time limit, in steps
HORIZON = 500
_OBSERVATION_SIZE = 39
# the raw environment's own step counter raises past its max_path_length (500); the TimeLimit ends episodes instead
_NO_INNER_LIMIT = 2**62


def _import_metaworld():
    try:
        import metaworld  # noqa: F401  (registers Meta-World's own ids too)
        from metaworld.env_dict import ALL_V3_ENVIRONMENTS
        from metaworld.policies import ENV_POLICY_MAP
    except ImportError as error:
        raise ImportError(f"the Meta-World environments need the metaworld package (pip install "
                          f"'curteach[metaworld]', Gymnasium >= 1.1): {error}") from None
    return ALL_V3_ENVIRONMENTS, ENV_POLICY_MAP


# (model file, offscreen width, height) -> the MuJoCo model compiled from it, never simulated: compiling Meta-World's
# XML is nearly all of an environment's construction (0.12 s of 0.14 s), and the evaluator builds one environment per
# evaluation episode; a copy of the compiled model is the same model, byte for byte, for about a tenth of that. A
# model holds about 21 MB (its textures), so only the last few files are kept: the evaluator builds one task's
# environments together, so even one kept model compiles each task once per evaluation instead of once per episode
_COMPILED_MODELS: OrderedDict[tuple, Any] = OrderedDict()
#: compiled models kept (least recently used dropped first)
_KEPT_MODELS = 4


def _raw_environment(env_cls: type) -> Any:
    """``env_cls()``, its MuJoCo model a copy of the one this process compiled first from the same file (each
    environment owns its copy: Meta-World writes into its model, e.g. the mocap welds)."""
    import copy

    import mujoco

    def initialize_simulation():
        key = (raw.fullpath, raw.width, raw.height)
        compiled = _COMPILED_MODELS.get(key)
        if compiled is None:
            model, data = type(raw)._initialize_simulation(raw)  # Gymnasium's: compile, size the offscreen buffer
            _COMPILED_MODELS[key] = copy.copy(model)
            while len(_COMPILED_MODELS) > _KEPT_MODELS:
                _COMPILED_MODELS.popitem(last=False)
            return model, data
        _COMPILED_MODELS.move_to_end(key)
        model = copy.copy(compiled)
        return model, mujoco.MjData(model)

    raw = env_cls.__new__(env_cls)
    # Gymnasium's MujocoEnv.__init__ builds the simulation through this method; shadowed for the constructor only,
    # so the environment is afterwards an ordinary instance of its class (pickled, copied and named as one)
    raw._initialize_simulation = initialize_simulation
    try:
        raw.__init__()
    finally:
        del raw._initialize_simulation
    return raw


def metaworld_task_names() -> tuple[str, ...]:
    """The Meta-World v3 tasks that have a scripted expert (all 50 in metaworld 3.1), in Meta-World's order."""
    environments, policies = _import_metaworld()
    return tuple(name for name in environments if name in policies)


def resolve_task(name: str) -> str:
    """A task name with or without its ``-v3`` suffix -> Meta-World's name (``push`` -> ``push-v3``).

    Raises:
        ValueError: an unknown task (one line listing the tasks, without their suffix).
    """
    tasks = metaworld_task_names()
    text = str(name).strip()
    full = text if text.endswith("-v3") else f"{text}-v3"
    if full not in tasks:
        raise ValueError(f"unknown Meta-World task {text!r}; tasks: "
                         f"{', '.join(task.removesuffix('-v3') for task in tasks)}")
    return full


def scripted_expert(task: str):
    """Meta-World's scripted policy for ``task`` (``get_action(observation) -> (4,) action``)."""
    _, policies = _import_metaworld()
    return policies[resolve_task(task)]()


class MetaWorldTaskEnv(gym.Env):
    """One Meta-World task, its configuration drawn from the reset seed (see the module docstring).

    Args:
        task: a Meta-World v3 task, with or without ``-v3`` (``"push"``, ``"pick-place-v3"``).
        terminate_on_success: end the episode (``terminated``) at the first success.

    Attributes:
        task: the task's Meta-World name (``"push-v3"``).
    """

    metadata = {"render_modes": []}

    def __init__(self, task: str = "reach-v3", terminate_on_success: bool = True):
        environments, _ = _import_metaworld()
        self.task = resolve_task(task)
        self.terminate_on_success = bool(terminate_on_success)
        env_cls = environments[self.task]
        raw = _raw_environment(env_cls)
        # Meta-World's set_task with the multi-task benchmarks' settings (goal observable), then sampling unfrozen
        # and drawn from the env's own generator: what every seeded reset below relies on. These attributes are
        # metaworld 3.1's (the extra pins 3.1.1); tests/envs/test_metaworld_env.py checks what they give.
        from metaworld.types import Task

        placeholder = {"rand_vec": np.zeros(raw._random_reset_space.low.size), "env_cls": env_cls,
                       "partially_observable": False}
        raw.set_task(Task(env_name=self.task, data=pickle.dumps(placeholder)))
        raw._freeze_rand_vec = False
        raw.seeded_rand_vec = True
        raw.max_path_length = _NO_INNER_LIMIT
        self._raw = raw
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(_OBSERVATION_SIZE,), dtype=np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a configuration from the environment's generator (re-seeded by ``seed``) and start there.

        Returns:
            ``((39,) float64 observation, info)``; ``info["success"]`` is false.
        """
        super().reset(seed=seed)
        self._raw.np_random = self.np_random  # the configuration's draws come from our (seeded) stream
        observation, _ = self._raw.reset()
        return np.asarray(observation, dtype=np.float64), {"success": False}

    def step(self, action):
        """One Meta-World step; ``terminated`` at a success when ``terminate_on_success``.

        Returns:
            ``(observation (39,), reward, terminated, False, info)``; ``info`` holds Meta-World's metrics as floats and
            ``success`` as a bool.
        """
        observation, reward, _, _, info = self._raw.step(np.asarray(action, dtype=np.float32))
        info = {key: float(value) for key, value in info.items()}
        success = bool(info.get("success", 0.0))
        info["success"] = success
        terminated = success and self.terminate_on_success
        return np.asarray(observation, dtype=np.float64), float(reward), terminated, False, info

    def close(self) -> None:
        """Release MuJoCo's resources."""
        self._raw.close()
