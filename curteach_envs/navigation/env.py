"""The Gymnasium base class of the navigation tasks, the table export, and replay of an action sequence.

A navigation task (a :class:`~curteach_envs.navigation.grid.GridTask` subclass) follows the rules of
:mod:`~curteach_envs.navigation.dynamics`: :class:`NavigationEnv` steps its one-row
:class:`~curteach_envs.navigation.dynamics.TaskBatch` one action at a time; its deterministic table
``(next_state (S, 3), reward (S, 3))`` (``next_state = -1`` for "the episode ends"), the same rules applied to
every state, becomes a :class:`~curteach_envs.TabularMDP` by :func:`table_to_tabular`, and :func:`replay` plays an
action sequence in it. See docs/environments/navigation.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import gymnasium as gym
import numpy as np
import scipy.sparse as sp
from gymnasium import spaces

from curteach_envs._util import check_int
from curteach_envs.navigation.grid import ACTION_NAMES, HORIZON, N_ACTIONS, N_CELLS, NEXT_POSE, OBSERVATION_SHAPE, SIZE
from curteach_envs.navigation.render import nav_ansi, nav_rgb
from curteach_envs.tabular import TabularMDP

__all__ = ["NavigationEnv", "table_to_tabular", "replay"]


def table_to_tabular(
    next_state: np.ndarray,
    reward: np.ndarray,
    start: int,
    features: np.ndarray,
    feature_names: Sequence[str],
    name: str,
) -> TabularMDP:
    """A :class:`TabularMDP` from a deterministic table, with one absorbing terminal state appended (index ``S``).

    Args:
        next_state: ``(S, A)`` successors (``-1`` terminal).
        reward: ``(S, A)`` rewards (state-action reward, since navigation rewards depend on the move).
        start: the start state.
        features: ``(S, d)`` features of the live states (the terminal state gets zeros).
        feature_names: ``d`` names.
        name: label of the MDP.

    Returns:
        ``TabularMDP`` with ``S + 1`` states, ``gamma = 1`` and ``horizon = 30``.
    """
    next_state = np.asarray(next_state)
    n_live, n_actions = next_state.shape
    terminal = n_live
    target = np.where(next_state >= 0, next_state, terminal).ravel()
    target = np.concatenate([target, np.full(n_actions, terminal)])
    n_states = n_live + 1
    transitions = sp.csr_matrix(
        (np.ones(target.size), target, np.arange(target.size + 1)), shape=(n_states * n_actions, n_states)
    )
    full_reward = np.zeros((n_states, n_actions))
    full_reward[:n_live] = reward
    full_features = np.zeros((n_states, features.shape[1]))
    full_features[:n_live] = features
    initial = np.zeros(n_states)
    initial[start] = 1.0
    task_of_state = np.zeros(n_states, dtype=np.int64)
    task_of_state[terminal] = -1
    return TabularMDP(
        transitions=transitions,
        reward=full_reward,
        features=full_features,
        initial_state_dist=initial,
        gamma=1.0,
        horizon=HORIZON,
        feature_names=tuple(feature_names),
        task_of_state=task_of_state,
        action_names=ACTION_NAMES,
        name=name,
    )


def replay(task, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Play ``actions`` in the task's dynamics (no horizon).

    Returns:
        ``poses (L + 1,)`` (``-1`` once off the grid), ``masks (L + 1,)`` visited-goal masks, ``rewards (L,)`` and
        whether the last action ended the episode.

    Raises:
        ValueError: an action is not in ``{0, 1, 2}`` or follows the end of the episode.
    """
    nxt, reward = task.dynamics()
    actions = np.asarray(actions)
    if actions.size and (actions.min() < 0 or actions.max() > 2):
        raise ValueError("actions must be in {0, 1, 2}")
    state = task.start_state
    poses = np.empty(actions.size + 1, dtype=np.int64)
    masks = np.zeros(actions.size + 1, dtype=np.int64)
    rewards = np.empty(actions.size, dtype=np.int64)
    poses[0], masks[0] = task.decode(state)
    ended = False
    for t, a in enumerate(actions.tolist()):
        if ended:
            raise ValueError(f"action {t} follows the end of the episode")
        rewards[t] = reward[state, a]
        following = int(nxt[state, a])
        if following < 0:
            ended = True
            poses[t + 1], masks[t + 1] = NEXT_POSE[poses[t], a], masks[t]
        else:
            state = following
            poses[t + 1], masks[t + 1] = task.decode(state)
    return poses, masks, rewards, ended


class NavigationEnv(gym.Env):
    """Base of ``ShortestPathTeachEnv`` and ``TSPTeachEnv``: a task's deterministic table, stepped one action at a time.

    ## Description
    A task is a 6 x 6 grid (row 0 is the top edge); the agent has a cell and a direction (``0 east, 1 south,
    2 west, 3 north``). Subclasses set ``task_class`` and implement ``_sample_task(rng)``; a task object provides
    ``start_pose``, ``step(pose, mask, action)`` and ``observation(pose, mask) -> (7, 6, 6)`` (its one-row
    :class:`~curteach_envs.navigation.dynamics.TaskBatch`'s, the batched rules on one state),
    ``cell_kinds(mask) -> (36,)`` and ``tabular(forbid_exits)``.
    ``reset(seed=...)`` draws a task from the subclass's distribution, ``reset(options={"task": task})`` uses a
    given one, and ``tabular()`` exports the current task. See docs/environments/navigation.md.

    ## Action Space
    ``Discrete(3)``: ``0 move`` (one cell in the facing direction), ``1 turn_left`` (direction - 1),
    ``2 turn_right`` (direction + 1).

    ## Observation Space
    ``Box(0, 1, (7, 6, 6), float32)``: channels 0-3 hold the agent as a one-hot in the channel of its direction
    (east, south, west, north), channels 4-6 the task's planes. After a move off the grid the agent is not drawn in
    the final observation (as in the original).

    ## Rewards
    Integer step rewards from the task's table (see the subclasses).

    ## Episode End
    The episode terminates as the task's rules say and is truncated after ``horizon`` (30) actions. A step after
    the end raises ``RuntimeError``.

    ## Arguments
    * ``render_mode``: ``None``, ``"ansi"`` (a text grid) or ``"rgb_array"`` (a picture).
    * ``horizon``: actions before truncation, an integer in ``[1, 10000]`` (default 30, the original's evaluation
      horizon).

    ``info`` holds ``pose`` and ``steps``, and ``row``, ``col``, ``direction`` while the agent is on the grid.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    task_class: type = object
    name = "Navigation"

    def __init__(self, render_mode: str | None = None, horizon: int = HORIZON):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}; got {render_mode!r}")
        self.render_mode = render_mode
        self.horizon = check_int("horizon", horizon, 1, 10_000)
        self.observation_space = spaces.Box(0.0, 1.0, shape=OBSERVATION_SHAPE, dtype=np.float32)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self.task = None
        self._pose = -1
        self._mask = 0
        self._steps = 0
        self._done = False

    def _sample_task(self, rng: np.random.Generator):  # pragma: no cover - abstract
        raise NotImplementedError

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode on a task drawn from the task distribution, or on ``options["task"]``."""
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"task"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; allowed: 'task'")
        if "task" in options:
            task = options["task"]
            if isinstance(task, Mapping):  # a layout as plain data: a Minari episode's stored reset options
                task = self._task_from_layout(task)
            if not isinstance(task, self.task_class):
                raise ValueError(f"options['task'] must be a {self.task_class.__name__}; got {type(task).__name__}")
        else:
            task = self._sample_task(self.np_random)
        self.task = task
        self._pose, self._mask = int(task.start_pose), 0
        self._steps = 0
        self._done = False
        return self._observe(), self._info()

    def _task_from_layout(self, layout: Mapping):
        """A task from ``{"start": int, "direction": int, "goals": [cells], "muds": [cells], ...}`` (the object
        fields of ``task_class``; stored files may hand back lists as arrays)."""
        fields = ("start", "direction") + self.task_class.OBJECT_FIELDS
        unknown = set(layout) - set(fields)
        if unknown:
            raise ValueError(f"unknown task layout keys {sorted(unknown)}; allowed: {', '.join(fields)}")
        values = {k: (int(v) if k in ("start", "direction") else tuple(int(c) for c in v)) for k, v in layout.items()}
        return self.task_class(**values)

    def step(self, action):
        """Take ``action`` (0 move, 1 turn_left, 2 turn_right); see the class docstring."""
        if self.task is None:
            raise RuntimeError("call reset() before step()")
        if isinstance(action, (bool, np.bool_)) or not self.action_space.contains(action):
            raise ValueError(f"action must be 0 (move), 1 (turn_left) or 2 (turn_right); got {action!r}")
        if self._done:
            raise RuntimeError("the episode has ended; call reset()")
        # after the last action the agent stays drawn where it ended (goal, bomb, home) and is not drawn off the grid
        # (pose -1), as in the original
        self._pose, self._mask, reward, terminated = self.task.step(self._pose, self._mask, int(action))
        reward = float(reward)
        self._steps += 1
        truncated = (not terminated) and self._steps >= self.horizon
        self._done = terminated or truncated
        return self._observe(), reward, terminated, truncated, self._info()

    def _observe(self) -> np.ndarray:
        return self.task.observation(self._pose, self._mask)

    def _info(self) -> dict:
        info = {"pose": self._pose, "steps": self._steps}
        if self._pose >= 0:
            info.update(row=(self._pose >> 2) // SIZE, col=(self._pose >> 2) % SIZE, direction=self._pose & 3)
        return info

    def render(self):
        """The grid as text (``"ansi"``) or a ``(145, 145, 3)`` uint8 picture (``"rgb_array"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self.task is None:
            kinds, pose, title = np.full(N_CELLS, "empty"), -1, f"{self.name} (call reset())"
        else:
            kinds, pose, title = self.task.cell_kinds(self._mask), self._pose, f"{self.name}, step {self._steps}"
        if self.render_mode == "ansi":
            return nav_ansi(kinds, pose, title)
        return nav_rgb(kinds, pose)

    # ---------------------------------------------------------------- export
    def tabular(self, forbid_exits: bool = False) -> TabularMDP:
        """The current task's :class:`TabularMDP` (call ``reset`` first); see ``task.tabular``."""
        if self.task is None:
            raise RuntimeError("call reset() before tabular()")
        return self.task.tabular(forbid_exits=forbid_exits)
