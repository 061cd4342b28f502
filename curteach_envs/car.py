"""The car-driving task of the paper's teacher-centric experiments (Section 5): ``CarTeach-v0``.

A road is ``n_instances`` instances of each of 8 task types T0..T7. A task is a road ``road_length`` rows long and
2 columns wide; the car starts at the bottom-left cell and moves one row forward per step. The layout follows the
authors' code exactly (see docs/environments/car.md), including its oddities: a +0.5 reward offset, -4.5 for
HOV + police, a forced T6 pedestrian without look-ahead, and an absorbing sink after the last row.

State index of cell (block ``b``, row ``r``, column ``c``): ``s = 2 L b + 2 r + c``, with block ``b = 8 j + k`` for
instance ``j`` of type ``Tk`` (instance-major). The sink is the last state.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import scipy.sparse as sp
from gymnasium import spaces

from curteach_envs._util import check_int
from curteach_envs.tabular import TabularMDP

__all__ = [
    "CarTeachEnv",
    "CAR_FEATURE_NAMES",
    "CAR_ACTION_NAMES",
    "CAR_TRUE_WEIGHTS",
    "N_TASK_TYPES",
    "sample_road",
    "car_reward",
    "car_transitions",
    "car_tabular",
    "INIT_CHOICES",
    "parse_init",
]

N_TASK_TYPES = 8
CAR_FEATURE_NAMES = ("stone", "grass", "car", "ped", "HOV", "car-in-f", "ped-in-f", "police")
CAR_ACTION_NAMES = ("straight", "left", "right")
CAR_TRUE_WEIGHTS = np.array([-1.0, -0.5, -5.0, -10.0, 1.0, -2.0, -5.0, 0.0])
STONE, GRASS, CAR, PED, HOV, CAR_FRONT, PED_FRONT, POLICE = range(8)
POLICE_ROWS = (2, 6)

# Objects a cell can hold before look-ahead flags: empty, stone, grass, car, ped (index = feature + 1).
_OBJECT_FEATURE = np.array([-1, STONE, GRASS, CAR, PED])
# Per task type, the object probabilities of the (left, right) column. None: set deterministically below.
_CELL_PROBS: dict[int, tuple[list[float], list[float]] | None] = {
    0: None,  # traffic-free highway: all empty
    1: ([0.75, 0, 0, 0.25, 0], [0.75, 0, 0, 0.25, 0]),
    2: None,  # right column stone
    3: ([0.6, 0.2, 0, 0.2, 0], [0.6, 0.2, 0, 0.2, 0]),
    4: None,  # right column grass
    5: ([0.6, 0, 0.2, 0.2, 0], [0.6, 0, 0.2, 0.2, 0]),
    6: ([0.95, 0, 0, 0, 0.05], [0, 0, 0.95, 0, 0.05]),
    7: None,  # right column HOV, police on rows 2 and 6
}
REWARD_VARIANTS = ("original", "paper")
OBSERVATION_VARIANTS = ("state", "features")

#: ``--init`` values: the task types the learner is pre-trained on.
INIT_CHOICES = {"none": 0, "T0": 1, "T0-T1": 2, "T0-T2": 3, "T0-T3": 4, "T0-T4": 5, "T0-T5": 6, "T0-T6": 7, "T0-T7": 8}


def parse_init(text: str) -> int:
    """``"T0"`` -> 1, ``"T0-T3"`` -> 4 (the original's ``init_lanes``), ``"none"`` -> 0."""
    if text not in INIT_CHOICES:
        raise ValueError(f"init must be one of {list(INIT_CHOICES)}; got {text!r}")
    return INIT_CHOICES[text]


def sample_road(rng: np.random.Generator, n_instances: int = 5, road_length: int = 10) -> np.ndarray:
    """Sample a road layout.

    Args:
        rng: the random generator (the only source of randomness).
        n_instances: instances per task type (N).
        road_length: rows per task (L), at least 2.

    Returns:
        ``(N, 8, L, 2, 8)`` uint8 array ``[instance, type, row, column, feature]`` of binary features; reshaped to
        ``(N * 8 * L * 2, 8)`` it is indexed by state.
    """
    # the MDP has 2 * 8 * n_instances * road_length + 1 states: these bounds keep it at most 1.6 million
    check_int("n_instances", n_instances, 1, 1_000)
    check_int("road_length", road_length, 2, 100)
    N, L = n_instances, road_length
    road = np.zeros((N, N_TASK_TYPES, L, 2, 8), dtype=np.uint8)
    for task_type, probs in _CELL_PROBS.items():
        if probs is None:
            continue
        for column, p in enumerate(probs):
            objects = rng.choice(len(_OBJECT_FEATURE), size=(N, L), p=p)
            inst, row = np.nonzero(objects)
            road[inst, task_type, row, column, _OBJECT_FEATURE[objects[inst, row]]] = 1
    road[:, 2, :, 1, STONE] = 1
    road[:, 4, :, 1, GRASS] = 1
    road[:, 7, :, 1, HOV] = 1
    police_rows = [r for r in POLICE_ROWS if r < L]
    road[:, 7, police_rows, :, POLICE] = 1
    # Look-ahead: an object on row r flags the cell one row behind it (same column); row-0 objects flag nothing.
    road[:, :, :-1, :, CAR_FRONT] |= road[:, :, 1:, :, CAR]
    road[:, :, :-1, :, PED_FRONT] |= road[:, :, 1:, :, PED]
    # T6 lanes without any pedestrian get one at in-lane offset L - 1, replacing the cell's content. The original
    # adds no ped-in-f behind it (a documented oddity we keep: docs/deviations.md, "The car environment").
    no_ped = ~road[:, 6, :, :, PED].any(axis=(1, 2))
    row, column = divmod(L - 1, 2)
    road[no_ped, 6, row, column, :] = 0
    road[no_ped, 6, row, column, PED] = 1
    return road


def car_reward(features: np.ndarray, variant: str = "original") -> np.ndarray:
    """True reward of road cells from their ``(..., 8)`` features.

    ``"original"``: ``w . phi + 0.5``, and ``-4.5`` on HOV + police cells (the authors' code).
    ``"paper"``: ``w . phi``, and ``-5`` on HOV + police (the paper's text).
    """
    if variant not in REWARD_VARIANTS:
        raise ValueError(f"reward must be one of {REWARD_VARIANTS}; got {variant!r}")
    features = np.asarray(features, dtype=np.float64)
    offset = 0.5 if variant == "original" else 0.0
    reward = features @ CAR_TRUE_WEIGHTS + offset
    caught = (features[..., HOV] == 1) & (features[..., POLICE] == 1)
    return np.where(caught, -5.0 + offset, reward)


def car_transitions(n_tasks: int, road_length: int) -> sp.csr_matrix:
    """``(S * 3, S)`` CSR transitions of a road with ``n_tasks`` tasks; the sink (last state) is absorbing.

    Straight moves to the same column of the next row; left/right move to the other column, and steering into the
    edge the car is already on gives the two cells of the next row with probability 1/2 each. The last row leads to
    the sink.
    """
    L = road_length
    n_cells = n_tasks * 2 * L
    S, A = n_cells + 1, 3
    sink = n_cells
    s = np.arange(n_cells)
    row, column = (s % (2 * L)) // 2, s % 2
    moving = row < L - 1
    left, right = s + 2 - column, s + 3 - column  # the next row's left and right cells
    ahead = s + 2
    src, dst, prob = [], [], []

    def add(states, action, targets, p):
        src.append(states * A + action)
        dst.append(targets)
        prob.append(np.full(states.size, p))

    m = s[moving]
    lft, rgt, fwd = left[moving], right[moving], ahead[moving]
    on_left = column[moving] == 0
    add(m, 0, fwd, 1.0)
    # action 1 (left): from the left column 50/50, from the right column to the next row's left cell
    add(m[on_left], 1, lft[on_left], 0.5)
    add(m[on_left], 1, rgt[on_left], 0.5)
    add(m[~on_left], 1, lft[~on_left], 1.0)
    # action 2 (right): from the left column to the next row's right cell, from the right column 50/50
    add(m[on_left], 2, rgt[on_left], 1.0)
    add(m[~on_left], 2, lft[~on_left], 0.5)
    add(m[~on_left], 2, rgt[~on_left], 0.5)
    last = np.concatenate([s[~moving], [sink]])
    for action in range(A):
        add(last, action, np.full(last.size, sink), 1.0)
    matrix = sp.csr_matrix(
        (np.concatenate(prob), (np.concatenate(src), np.concatenate(dst))), shape=(S * A, S)
    )
    return matrix


def car_tabular(road: np.ndarray, gamma: float = 0.99, reward: str = "original") -> TabularMDP:
    """The :class:`TabularMDP` of a road from :func:`sample_road`."""
    N, K, L = road.shape[:3]
    n_tasks = N * K
    cell_features = road.reshape(n_tasks * L * 2, 8).astype(np.float64)
    features = np.vstack([cell_features, np.zeros((1, 8))])
    rewards = np.append(car_reward(cell_features, reward), 0.0)
    S = features.shape[0]
    start_states = np.arange(n_tasks) * 2 * L
    init = np.zeros(S)
    init[start_states] = 1.0 / n_tasks
    task_of_state = np.append((np.arange(S - 1) // (2 * L)) % K, -1)
    return TabularMDP(
        transitions=car_transitions(n_tasks, L),
        reward=rewards,
        features=features,
        initial_state_dist=init,
        gamma=gamma,
        horizon=L,
        feature_names=CAR_FEATURE_NAMES,
        start_states=start_states,
        task_of_state=task_of_state,
        action_names=CAR_ACTION_NAMES,
        name="CarTeach",
    )


class CarTeachEnv(gym.Env):
    """Car driving on a road of 8 task types (the paper's Section 5), with a tabular export.

    ## Description
    The task of the paper's teacher-centric experiments, built exactly as the authors' code builds it. A road is
    ``n_instances`` (5) instances of each of 8 task types T0..T7, 40 tasks; each task is ``road_length`` (10) rows
    by 2 columns. T0 empty highway; T1 cars (p = 0.25 per cell); T2 stone right column; T3 stone/car (0.2/0.2);
    T4 grass right column; T5 grass/car (0.2/0.2); T6 pedestrians (0.05), grass right column, and a forced
    pedestrian when a lane has none; T7 HOV right column with police on rows 2 and 6 of both columns. Cars and
    pedestrians flag the cell one row behind them (``car-in-f``, ``ped-in-f``). The features of a cell, in this
    order: ``stone, grass, car, ped, HOV, car-in-f, ped-in-f, police``, with true weights
    ``-1, -0.5, -5, -10, +1, -2, -5, 0``. State index ``s = 2 L b + 2 r + c`` for row ``r``, column ``c`` of task
    block ``b = 8 * instance + type``; the absorbing sink is the last state (801 states with the defaults).
    ``tabular()`` returns the road's :class:`~curteach_envs.TabularMDP`; ``picture()`` a picture of the road. See
    docs/environments/car.md.

    ## Action Space
    ``Discrete(3)``: ``0 straight``, ``1 left``, ``2 right``. The car always moves one row forward: straight to the
    same column, left/right to the other column; steering into the edge it is already on lands on either cell of
    the next row with probability 1/2.

    ## Observation Space
    ``observation="state"`` (default): ``Discrete(S)``, the state index. ``observation="features"``:
    ``Box(0, 1, (8,), float32)``, the cell's 8 binary features (all zero in the sink).

    ## Rewards
    Each step pays the reward of the cell it leaves (so returns match the tabular values). ``reward="original"``
    (default, the authors' code): ``w . phi + 0.5``, and ``-4.5`` on HOV + police. ``reward="paper"``: ``w . phi``,
    and ``-5`` on HOV + police.

    ## Episode End
    An episode starts at the bottom-left cell of a task: drawn uniformly, or the one given by
    ``reset(options={"task": i})`` or ``reset(options={"start_state": s})``. It terminates after the last row
    (``road_length`` steps), in the sink; there is no truncation. A step after the end raises ``RuntimeError``.

    ## Arguments
    * ``render_mode``: ``None``, ``"ansi"`` (text road of the current task with the car) or ``"rgb_array"`` (a
      picture of the current task).
    * ``layout_seed``: seed of the road layout, a non-negative integer, or ``None`` for a fresh random road; the
      same seed gives the same 40 tasks. Default 0.
    * ``n_instances``: instances per task type, an integer >= 1 (default 5, so 40 tasks).
    * ``road_length``: rows per task, an integer >= 2 (default 10).
    * ``gamma``: discount of the tabular export, in ``[0, 1]`` (default 0.99, the IRL experiment; BC uses 0.999).
    * ``reward``: ``"original"`` (the authors' code, default) or ``"paper"`` (no +0.5 offset, -5 for HOV + police).
    * ``observation``: ``"state"`` (the state index, default) or ``"features"`` (the 8 binary features, float32).

    ``info`` holds ``state``, ``task``, ``task_type``, ``row`` and ``column`` (``-1`` in the sink). Invalid
    keyword values, actions, reset options or start states raise ``ValueError`` naming the allowed range.

    ## Version History
    * v0: initial version.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        render_mode: str | None = None,
        layout_seed: int | None = 0,
        n_instances: int = 5,
        road_length: int = 10,
        gamma: float = 0.99,
        reward: str = "original",
        observation: str = "state",
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}; got {render_mode!r}")
        if reward not in REWARD_VARIANTS:
            raise ValueError(f"reward must be one of {REWARD_VARIANTS}; got {reward!r}")
        if observation not in OBSERVATION_VARIANTS:
            raise ValueError(f"observation must be one of {OBSERVATION_VARIANTS}; got {observation!r}")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be a number in [0, 1]; got {gamma!r}")
        bad_seed = isinstance(layout_seed, bool) or not isinstance(layout_seed, (int, np.integer)) or layout_seed < 0
        if layout_seed is not None and bad_seed:
            raise ValueError(f"layout_seed must be a non-negative integer or None; got {layout_seed!r}")
        check_int("n_instances", n_instances, 1)
        check_int("road_length", road_length, 2)
        self.render_mode = render_mode
        self.layout_seed = layout_seed
        self.n_instances = int(n_instances)
        self.road_length = int(road_length)
        self.gamma = float(gamma)
        self.reward_variant = reward
        self.observation = observation

        self.road = sample_road(np.random.default_rng(layout_seed), self.n_instances, self.road_length)
        self.road.setflags(write=False)
        self._mdp = car_tabular(self.road, self.gamma, reward)
        self.n_tasks = self.n_instances * N_TASK_TYPES
        self.n_states = self._mdp.n_states
        self.sink = self.n_states - 1
        self._next_cells = self._mdp.transitions  # CSR rows s * 3 + a

        self.action_space = spaces.Discrete(3)
        if observation == "state":
            self.observation_space = spaces.Discrete(self.n_states)
        else:
            self.observation_space = spaces.Box(0.0, 1.0, shape=(8,), dtype=np.float32)
        self._state: int | None = None

    # ---------------------------------------------------------------- export
    def tabular(self) -> TabularMDP:
        """The road's :class:`TabularMDP` (built once; immutable)."""
        return self._mdp

    def task_of(self, state: int) -> tuple[int, int, int]:
        """``(task block, row, column)`` of a road cell."""
        block, offset = divmod(int(state), 2 * self.road_length)
        return block, offset // 2, offset % 2

    # ---------------------------------------------------------------- gym API
    def _observe(self, state: int):
        if self.observation == "state":
            return np.int64(state)
        return self._mdp.features[state].astype(np.float32)

    def _info(self, state: int) -> dict:
        if state == self.sink:
            return {"state": state, "task": -1, "task_type": -1, "row": -1, "column": -1}
        block, row, column = self.task_of(state)
        return {"state": state, "task": block, "task_type": block % N_TASK_TYPES, "row": row, "column": column}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode; ``options`` may hold ``"task"`` (0..n_tasks-1) or ``"start_state"``."""
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"task", "start_state"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; allowed: 'task', 'start_state'")
        if "task" in options and "start_state" in options:
            raise ValueError("give either options['task'] or options['start_state'], not both")
        starts = self._mdp.start_states
        if "task" in options:
            task = options["task"]
            state = int(starts[check_int("options['task']", task, 0, self.n_tasks - 1)])
        elif "start_state" in options:
            state = options["start_state"]
            integer = not isinstance(state, bool) and isinstance(state, (int, np.integer))
            if not integer or int(state) not in set(starts.tolist()):
                raise ValueError(
                    f"options['start_state'] must be a start state: a multiple of {2 * self.road_length} in "
                    f"[0, {int(starts[-1])}]; got {state!r}"
                )
            state = int(state)
        else:
            state = int(self.np_random.choice(starts))
        self._state = state
        return self._observe(state), self._info(state)

    def step(self, action):
        """Drive one row forward with ``action`` (0 straight, 1 left, 2 right); see the class docstring."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if isinstance(action, (bool, np.bool_)) or not self.action_space.contains(action):
            raise ValueError(f"action must be 0 (straight), 1 (left) or 2 (right); got {action!r}")
        if self._state == self.sink:
            raise RuntimeError("the episode has terminated; call reset()")
        state = self._state
        row = self._next_cells.getrow(state * 3 + int(action))
        next_state = int(self.np_random.choice(row.indices, p=row.data))
        reward = float(self._mdp.reward[state])
        self._state = next_state
        terminated = next_state == self.sink
        return self._observe(next_state), reward, terminated, False, self._info(next_state)

    def render(self):
        """The current task as text (``"ansi"``) or a ``(H, W, 3)`` uint8 picture (``"rgb_array"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        from curteach_envs import render

        state = self.sink if self._state is None else self._state
        block = 0 if state == self.sink else self.task_of(state)[0]
        if self.render_mode == "ansi":
            return render.car_ansi(self.road, block, None if state == self.sink else state, self.road_length)
        return render.car_rgb(self.road, tasks=[block], agent_state=None if state == self.sink else state)

    def picture(self, task: int | None = None, cell: int = 16) -> np.ndarray:
        """``(H, W, 3)`` uint8 picture of one task, or of every task (types as columns, instances as rows)."""
        from curteach_envs import render

        if task is None:
            return render.car_rgb(self.road, tasks=None, cell=cell)
        return render.car_rgb(self.road, tasks=[check_int("task", task, 0, self.n_tasks - 1)], cell=cell)
