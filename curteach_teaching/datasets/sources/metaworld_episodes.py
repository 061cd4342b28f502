"""Meta-World scripted-expert episodes: seeded plans, one episode per plan, parallel generation.

Seeds. Task ``t`` (its position in Meta-World's list of 50) gets the child ``SeedSequence(seed, spawn_key=(t,))``
(what ``SeedSequence(seed).spawn(50)[t]`` would be), so a task's episodes depend on the master seed and the task only,
not on the other tasks of the command or their order. Each task's child spawns three streams: the episodes' reset
seeds, the choice of the noisy episodes and the noisy episodes' own noise streams. Reset seeds are drawn distinct from
``[2**20, 2**31)`` (:data:`~curteach_teaching.datasets.sources.base.TRAINING_SEEDS`), never from
:data:`~curteach_teaching.datasets.sources.base.HELD_OUT_SEEDS` = ``range(0, 2**20)``, the seeds left
for evaluation. Every episode is a pure function of its :class:`EpisodePlan`, so the episodes are the same for any
number of worker processes.

Actions. The expert is Meta-World's scripted policy (``metaworld.policies``); a noisy episode adds Gaussian noise of
standard deviation ``noise`` to every component of every action. The action taken and stored is that sum clipped to
``[-1, 1]`` and cast to the action space's ``float32`` (Meta-World clips too; storing what the environment received
makes the replay exact).

End. Episodes run in ``MetaWorldTask-v0`` (:mod:`curteach_envs.metaworld`): they end at the first success
(``terminated``) or at the step limit (``truncated``, 500 by default). See docs/experiments/metaworld.md for why.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.datasets.sources.base import TRAINING_SEEDS, run_in_chunks
from curteach_teaching.datasets.sources.metaworld_operators import (
    STYLES,
    OperatorController,
    assign_operators,
    parse_operators,
)

__all__ = [
    "ExpertEpisode",
    "EpisodePlan",
    "generate_expert_episodes",
    "plan_episodes",
    "run_expert_episode",
]

_CHUNK = 10  # episodes sent to a worker at once: large enough to amortise the transfer, small for a live bar
# Meta-World's policies warn that their gains may exceed the action bounds (the actions are clipped below), and
# Gymnasium's checker that the unbounded observation space is "probably too low": neither says anything here.
_QUIET = r".*(Constant\(s\) may be too high|A Box observation space (minimum|maximum) value is)"


@dataclass(frozen=True)
class EpisodePlan:
    """Everything one expert episode depends on.

    Attributes:
        task: Meta-World's task name (``"push-v3"``).
        index: the episode's position in its task's dataset (its Minari episode id).
        seed: the reset seed (in :data:`~.base.TRAINING_SEEDS`).
        noise: the standard deviation of the Gaussian action noise (0 for a clean episode).
        noise_seed: seed of the episode's own noise stream (used only when ``noise > 0``).
        max_steps: the step limit.
        operator: the operator style (:mod:`~.metaworld_operators`), or ``None`` for the plain (or noisy) expert;
            its draws come from the stream seeded by ``noise_seed``.
    """

    task: str
    index: int
    seed: int
    noise: float
    noise_seed: int
    max_steps: int
    operator: str | None = None


@dataclass(frozen=True)
class ExpertEpisode:
    """One generated episode of ``T`` steps.

    Attributes:
        plan: what it was generated from.
        observations: ``(T + 1, 39)`` float64.
        actions: ``(T, 4)`` float32, the actions taken (clipped to ``[-1, 1]``).
        rewards: ``(T,)`` float64, Meta-World's reward.
        successes: ``(T + 1,)`` bool, ``info["success"]`` after the reset and after every step.
        terminated, truncated: how the last step ended.
    """

    plan: EpisodePlan
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    successes: np.ndarray
    terminated: bool
    truncated: bool

    @property
    def length(self) -> int:
        """T, the number of actions."""
        return int(len(self.actions))

    @property
    def success(self) -> bool:
        """Whether the task was solved at some step."""
        return bool(self.successes.any())

    @property
    def success_step(self) -> int:
        """The step (1-based) at which success was first reported, or -1 when it never was."""
        hits = np.flatnonzero(self.successes)
        return int(hits[0]) if hits.size else -1

    def metadata(self) -> dict[str, Any]:
        """The per-episode metadata stored beside the episode (the reset seed is Minari's own ``seed``); with an
        operator also ``operator`` (its style), ``tier`` (``better``/``okay``/``worse``) and ``worse`` (a bool)."""
        meta = {
            "task": self.plan.task,
            "noisy": self.plan.noise > 0,
            "noise": float(self.plan.noise),
            "success": self.success,
            "success_step": self.success_step,
            "max_steps": int(self.plan.max_steps),
        }
        if self.plan.operator is not None:
            tier = STYLES[self.plan.operator]
            meta.update(operator=self.plan.operator, tier=tier, worse=tier == "worse")
        return meta


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low
            or (high is not None and value > high)):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {bounds}; got {value!r}")
    return int(value)


def _check_real(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not (
            math.isfinite(float(value)) and low <= float(value) <= high):
        raise ValueError(f"{name} must be a number in [{low:g}, {high:g}]; got {value!r}")
    return float(value)


def resolve_tasks(tasks: str | Sequence[str]) -> list[str]:
    """Task names (a comma-separated string or a sequence, with or without ``-v3``) -> Meta-World names.

    Raises:
        ValueError: an unknown or repeated task, or none (one line, listing the tasks).
    """
    from curteach_envs.metaworld import metaworld_task_names, resolve_task

    names = tasks.split(",") if isinstance(tasks, str) else [str(name) for name in tasks]
    resolved: list[str] = []
    for name in (name.strip() for name in names):
        if not name:
            continue
        task = resolve_task(name)
        if task in resolved:
            raise ValueError(f"Meta-World task {name!r} is given twice")
        resolved.append(task)
    if not resolved:
        raise ValueError("no Meta-World task given; tasks: "
                         f"{', '.join(task.removesuffix('-v3') for task in metaworld_task_names())}")
    return resolved


def plan_episodes(tasks: str | Sequence[str], episodes: int, seed: int, *, noise: float = 0.0,
                  noise_share: float = 1.0, max_steps: int = 500,
                  operators: str | None = None) -> list[EpisodePlan]:
    """The episodes to generate, task after task (see the module docstring for the seeds).

    Args:
        tasks: Meta-World tasks (:func:`resolve_tasks`).
        episodes: episodes per task (>= 1).
        seed: the master seed (>= 0).
        noise: the standard deviation of the Gaussian action noise of the noisy episodes, in ``[0, 10]``.
        noise_share: the fraction of each task's episodes that are noisy, in ``[0, 1]``: ``round(share * episodes)``
            of them (halves up), chosen by the seed. Ignored when ``noise`` is 0.
        max_steps: the step limit, in ``[1, 500]`` (Meta-World's horizon).
        operators: ``None`` (the plain expert, noisy as above), or operator styles with their shares
            (:func:`~.metaworld_operators.parse_operators`, e.g. ``"careful:0.3,hasty:0.4,hesitant:0.3"``): each
            task's episodes get their styles from the stream that otherwise chooses the noisy episodes
            (:func:`~.metaworld_operators.assign_operators`); ``noise`` is then the ``noisy`` style's standard
            deviation, needed exactly when that style is listed, and ``noise_share`` must stay 1.

    Returns:
        ``len(tasks) * episodes`` plans, ordered by task then index.
    """
    from curteach_envs.metaworld import metaworld_task_names

    task_names = resolve_tasks(tasks)
    episodes = _check_int("episodes", episodes, 1)
    seed = _check_int("seed", seed, 0)
    noise = _check_real("noise", noise, 0.0, 10.0)
    noise_share = _check_real("noise_share", noise_share, 0.0, 1.0)
    max_steps = _check_int("max_steps", max_steps, 1, 500)
    shares = None if operators is None else parse_operators(operators)
    if shares is not None:
        if noise_share != 1.0:
            raise ValueError("noise_share must be 1 with operators (their shares say which episodes are noisy)")
        if (noise > 0) != any(name == "noisy" for name, _ in shares):
            raise ValueError("noise must be > 0 exactly when the operators list the noisy style (its standard "
                             f"deviation); got noise {noise:g} with operators {operators!r}")
    n_noisy = math.floor(noise_share * episodes + 0.5) if noise > 0 else 0
    everyone = metaworld_task_names()
    plans = []
    for task in task_names:
        child = np.random.SeedSequence(seed, spawn_key=(everyone.index(task),))
        seed_stream, choice_stream, noise_stream = (np.random.default_rng(s) for s in child.spawn(3))
        seeds: list[int] = []
        used: set[int] = set()
        while len(seeds) < episodes:  # distinct within the task, so no two episodes share a configuration
            for drawn in seed_stream.integers(TRAINING_SEEDS.start, TRAINING_SEEDS.stop, size=episodes - len(seeds)):
                if int(drawn) not in used:
                    used.add(int(drawn))
                    seeds.append(int(drawn))
        if shares is not None:
            styles = assign_operators(shares, episodes, choice_stream)
            noise_seeds = noise_stream.integers(0, 2**63 - 1, size=episodes)
            plans.extend(EpisodePlan(task, index, seeds[index], noise if styles[index] == "noisy" else 0.0,
                                     int(noise_seeds[index]), max_steps, styles[index]) for index in range(episodes))
            continue
        noisy = np.zeros(episodes, dtype=bool)
        noisy[choice_stream.choice(episodes, size=n_noisy, replace=False)] = True
        noise_seeds = noise_stream.integers(0, 2**63 - 1, size=episodes)
        plans.extend(EpisodePlan(task, index, seeds[index], noise if noisy[index] else 0.0, int(noise_seeds[index]),
                                 max_steps) for index in range(episodes))
    return plans


_ENVS: dict[tuple[str, int], Any] = {}  # one env (and expert) per task and limit in each process, reused


def _env_and_expert(task: str, max_steps: int):
    import gymnasium as gym

    from curteach_envs.metaworld import METAWORLD_ENV_ID, scripted_expert

    key = (task, max_steps)
    if key not in _ENVS:
        _ENVS[key] = (gym.make(METAWORLD_ENV_ID, task=task, max_episode_steps=max_steps), scripted_expert(task))
    return _ENVS[key]


def run_expert_episode(plan: EpisodePlan) -> ExpertEpisode:
    """Play one episode with Meta-World's scripted expert, Gaussian noise added if the plan is noisy, or transformed by
    the plan's operator (which may also end the episode early: ``truncated``)."""
    env, expert = _env_and_expert(plan.task, plan.max_steps)
    operator = (None if plan.operator is None
                else OperatorController(plan.operator, np.random.default_rng(plan.noise_seed), plan.noise))
    rng = np.random.default_rng(plan.noise_seed) if plan.noise > 0 and operator is None else None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_QUIET, category=UserWarning)
        observation, info = env.reset(seed=plan.seed)
        observations, actions, rewards, successes = [observation], [], [], [bool(info.get("success", False))]
        terminated = truncated = False
        while not (terminated or truncated):
            action = np.asarray(expert.get_action(observation), dtype=np.float64)
            if operator is not None:
                action = operator.act(len(actions), action)
            elif rng is not None:
                action = action + plan.noise * rng.standard_normal(action.shape)
            action = np.clip(action, -1.0, 1.0).astype(np.float32)
            observation, reward, terminated, truncated, info = env.step(action)
            observations.append(observation)
            actions.append(action)
            rewards.append(float(reward))
            successes.append(bool(info["success"]))
            truncated = truncated or (operator is not None and not terminated and operator.stops_after(len(actions)))
    return ExpertEpisode(
        plan=plan,
        observations=np.asarray(observations, dtype=np.float64),
        actions=np.asarray(actions, dtype=np.float32).reshape(-1, 4),
        rewards=np.asarray(rewards, dtype=np.float64),
        successes=np.asarray(successes, dtype=bool),
        terminated=bool(terminated),
        truncated=bool(truncated),
    )


def _run_chunk(item: tuple[int, list[EpisodePlan]]) -> tuple[int, list[ExpertEpisode]]:
    start, plans = item
    return start, [run_expert_episode(plan) for plan in plans]



def generate_expert_episodes(plans: Sequence[EpisodePlan], *, workers: int | None = 1,
                             progress: bool = False) -> list[ExpertEpisode]:
    """Play every plan in ``workers`` processes (``None``: all cores); the result is in plan order and the same for
    any ``workers``. ``progress``: a tqdm bar on stderr counting episodes."""
    from tqdm import tqdm

    workers = _check_int("workers", (os.cpu_count() or 1) if workers is None else workers, 1)
    plans = list(plans)
    chunks = [(start, plans[start : start + _CHUNK]) for start in range(0, len(plans), _CHUNK)]
    bar = tqdm(total=len(plans), desc="Meta-World expert episodes", unit="episode", disable=not progress)
    return run_in_chunks(_run_chunk, chunks, len(plans), workers, bar)
