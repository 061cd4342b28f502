"""BabyAI demonstrations from Minigrid's scripted expert, ``BabyAIBot``: seeded plans, episodes, parallel generation.

Seeds. One ``numpy.random.SeedSequence(seed)`` spawns one child per level, in the order the levels are given; each
level's child spawns three streams: the episodes' reset seeds, the choice of the noisy episodes and the noisy
episodes' own action streams. Reset seeds are drawn from ``[2**20, 2**31)``
(:data:`~curteach_teaching.datasets.sources.base.TRAINING_SEEDS`), distinct over all episodes of all levels; they
never meet :data:`~curteach_teaching.datasets.sources.base.HELD_OUT_SEEDS` = ``range(0, 2**20)``, the seeds kept for
evaluation. Every episode is a pure function of its :class:`EpisodePlan`, so the episodes are the same for any number
of worker processes.

Noise. With ``noise=P``, ``round(P * N)`` of a level's ``N`` episodes (chosen by the seeded RNG) are noisy: at each
of their steps, with probability :data:`NOISE_STEP_PROBABILITY` (0.5), the action is drawn uniformly from the 7
actions instead of being the bot's. The bot is then told the action actually taken (``bot.replan(action_taken)``):
it is written for this "advising" use and plans to undo the action (step back, turn back, drop what was picked up,
re-close a door). One thing it cannot undo is opening a box (the box disappears; the bot raises
``DisappearedBoxError``): the episode then stops at that step, is marked truncated and records ``bot_gave_up``.
A clean episode never takes such a path; an error from the bot there is raised.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from curteach_teaching.datasets.sources.base import TRAINING_SEEDS, run_in_chunks

__all__ = [
    "NOISE_STEP_PROBABILITY",
    "BotEpisode",
    "EpisodePlan",
    "babyai_level_ids",
    "check_settings",
    "generate_bot_episodes",
    "make_level",
    "make_policy_env",
    "plan_episodes",
    "quiet_reset",
    "replay_episode",
    "resolve_levels",
    "run_bot_episode",
    "short_name",
    "show_progress",
]

#: Per-step probability that a noisy episode takes a uniformly random action instead of the bot's.
NOISE_STEP_PROBABILITY = 0.5
_CHUNK = 25  # episodes per task sent to a worker: large enough to amortise the transfer, small for a live bar


def babyai_level_ids() -> tuple[str, ...]:
    """The Gymnasium ids of Minigrid's BabyAI levels (``BabyAI-...-v0``), in registration order."""
    import minigrid  # noqa: F401  (registers the levels; Gymnasium 1.x loads no plug-ins by itself)

    return tuple(env_id for env_id in gym.registry if env_id.startswith("BabyAI-"))


def short_name(level: str) -> str:
    """``BabyAI-GoToLocal-v0`` -> ``GoToLocal``."""
    name = level.removeprefix("BabyAI-")
    return name.rsplit("-v", 1)[0] if "-v" in name else name


def resolve_levels(levels: str | Sequence[str]) -> list[str]:
    """Level names (a comma-separated string or a sequence; Gymnasium ids or their short form) -> Gymnasium ids.

    Raises:
        ValueError: an unknown or repeated level, or none at all (one line, listing the valid short names).
    """
    names = levels.split(",") if isinstance(levels, str) else [str(name) for name in levels]
    names = [name.strip() for name in names if name.strip()]
    known = babyai_level_ids()
    by_short = {short_name(env_id): env_id for env_id in known}
    resolved = []
    for name in names:
        env_id = name if name in known else by_short.get(name)
        if env_id is None:
            raise ValueError(f"unknown BabyAI level {name!r}; valid levels: {', '.join(by_short)}")
        if env_id in resolved:
            raise ValueError(f"BabyAI level {name!r} is given twice")
        resolved.append(env_id)
    if not resolved:
        raise ValueError(f"no BabyAI level given; valid levels: {', '.join(by_short)}")
    return resolved


def make_level(level: str):
    """``gymnasium.make(level)`` for a BabyAI id (Minigrid imported first, so the ids are registered)."""
    import minigrid  # noqa: F401

    return gym.make(level)


def make_policy_env(level: str, max_tokens: int | None = None):
    """A level as a policy sees it: missions as token ids
    (:class:`~curteach_teaching.learners.babyai_vocab.MissionTokens`) and resets that print nothing."""
    from curteach_teaching.learners.babyai_vocab import MAX_MISSION_TOKENS, MissionTokens

    return MissionTokens(_QuietReset(make_level(level)), MAX_MISSION_TOKENS if max_tokens is None else max_tokens)


class _QuietReset(gym.Wrapper):
    """``env`` whose ``reset`` swallows Minigrid's "Sampling rejected" lines (printed while sampling a layout)."""

    def reset(self, **kwargs):
        with contextlib.redirect_stdout(io.StringIO()):
            return self.env.reset(**kwargs)


@dataclass(frozen=True)
class EpisodePlan:
    """Everything one bot episode depends on.

    Attributes:
        level: the Gymnasium id.
        index: the episode's position in its level's dataset (its Minari episode id).
        seed: the reset seed (in :data:`~.base.TRAINING_SEEDS`).
        noisy: whether some of its actions are random.
        noise_seed: seed of the episode's own stream of random actions (used only when ``noisy``).
    """

    level: str
    index: int
    seed: int
    noisy: bool
    noise_seed: int


@dataclass(frozen=True)
class BotEpisode:
    """One generated episode of ``T`` steps.

    Attributes:
        plan: what it was generated from.
        images: ``(T + 1, 7, 7, 3)`` uint8 egocentric views.
        directions: ``(T + 1,)`` int64 headings.
        mission: the mission text (the same at every step of a BabyAI episode).
        actions: ``(T,)`` int64 actions taken.
        rewards: ``(T,)`` float64.
        random_actions: ``(T,)`` bool, which actions were random rather than the bot's.
        terminated, truncated: how the last step ended (``truncated`` also when the bot gave up).
        bot_gave_up: the bot could not continue after a random action (see the module docstring).
        noise_probability: the per-step probability of a random action (0 for a clean episode).
    """

    plan: EpisodePlan
    images: np.ndarray
    directions: np.ndarray
    mission: str
    actions: np.ndarray
    rewards: np.ndarray
    random_actions: np.ndarray
    terminated: bool
    truncated: bool
    bot_gave_up: bool
    noise_probability: float

    @property
    def length(self) -> int:
        """T, the number of actions."""
        return int(len(self.actions))

    @property
    def success(self) -> bool:
        """The mission was accomplished: BabyAI ends an episode with a positive reward exactly then."""
        return bool(self.terminated and self.rewards.size and self.rewards[-1] > 0)

    @property
    def noise_share(self) -> float:
        """The fraction of the episode's actions that were random."""
        return float(self.random_actions.mean()) if self.length else 0.0

    def metadata(self) -> dict[str, Any]:
        """The per-episode metadata stored beside the episode in its Minari dataset."""
        return {
            "level": self.plan.level,
            "noisy": bool(self.plan.noisy),
            "noise_probability": float(self.noise_probability),
            "noise_share": self.noise_share,
            "random_actions": int(self.random_actions.sum()),
            "bot_gave_up": bool(self.bot_gave_up),
            "success": self.success,
        }


def _check_count(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def check_settings(episodes: Any, seed: Any, noise: Any = 0.0, workers: Any = 1) -> None:
    """``ValueError`` (one line, named as the setting) unless ``episodes >= 1``, ``seed >= 0`` are integers, noise
    is a share in ``[0, 1]`` and ``workers`` is ``None`` or an integer ``>= 1``: what :func:`plan_episodes` and
    :func:`generate_bot_episodes` check, before any work."""
    _check_count("episodes", episodes, 1)
    _check_count("seed", seed, 0)
    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.floating)) or not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be a share in [0, 1]; got {noise!r}")
    if workers is not None:
        _check_count("workers", workers, 1)


def plan_episodes(levels: str | Sequence[str], episodes: int, seed: int, noise: float = 0.0) -> list[EpisodePlan]:
    """The episodes to generate, level after level (see the module docstring for the seeds).

    Args:
        levels: BabyAI levels (:func:`resolve_levels`).
        episodes: episodes per level (>= 1).
        seed: the master seed (>= 0).
        noise: the share of each level's episodes that are noisy, in ``[0, 1]``.

    Returns:
        ``len(levels) * episodes`` plans, ordered by level then index.
    """
    level_ids = resolve_levels(levels)
    check_settings(episodes, seed, noise, None)
    episodes, seed = int(episodes), int(seed)
    n_noisy = math.floor(float(noise) * episodes + 0.5)
    used: set[int] = set()
    plans = []
    for level, level_sequence in zip(level_ids, np.random.SeedSequence(seed).spawn(len(level_ids))):
        seed_stream, choice_stream, noise_stream = (np.random.default_rng(s) for s in level_sequence.spawn(3))
        seeds: list[int] = []
        while len(seeds) < episodes:
            for drawn in seed_stream.integers(TRAINING_SEEDS.start, TRAINING_SEEDS.stop, size=episodes - len(seeds)):
                if int(drawn) not in used:  # distinct over every level, so no two episodes share a layout
                    used.add(int(drawn))
                    seeds.append(int(drawn))
        noisy = np.zeros(episodes, dtype=bool)
        noisy[choice_stream.choice(episodes, size=n_noisy, replace=False)] = True
        noise_seeds = noise_stream.integers(0, 2**63 - 1, size=episodes)
        plans.extend(EpisodePlan(level, index, seeds[index], bool(noisy[index]), int(noise_seeds[index]))
                     for index in range(episodes))
    return plans


_ENVS: dict[str, Any] = {}  # one env per level and process, reused across episodes


def run_bot_episode(plan: EpisodePlan, noise_probability: float = NOISE_STEP_PROBABILITY) -> BotEpisode:
    """Play one episode with ``BabyAIBot`` (``bot.replan()`` every step), random actions mixed in if noisy."""
    from minigrid.utils.baby_ai_bot import BabyAIBot, DisappearedBoxError

    env = _ENVS.get(plan.level)
    if env is None:
        env = _ENVS[plan.level] = make_level(plan.level)
    # Layout sampling prints every rejected sample ("Sampling rejected: ...") to stdout.
    with contextlib.redirect_stdout(io.StringIO()):
        observation, _ = env.reset(seed=plan.seed)
    bot = BabyAIBot(env)
    rng = np.random.default_rng(plan.noise_seed) if plan.noisy else None
    probability = float(noise_probability) if plan.noisy else 0.0
    n_actions = int(env.action_space.n)
    images, directions = [observation["image"]], [observation["direction"]]
    mission = str(observation["mission"])
    actions, rewards, random_actions = [], [], []
    told: int | None = None  # the action the bot must hear about: one it did not suggest
    terminated = truncated = gave_up = False
    while True:
        try:
            suggested = int(bot.replan(told))
        except DisappearedBoxError:
            if not plan.noisy:
                raise
            gave_up = truncated = True
            break
        action, is_random = suggested, False
        if rng is not None and rng.random() < probability:
            action, is_random = int(rng.integers(n_actions)), True
        observation, reward, terminated, truncated, _ = env.step(action)
        images.append(observation["image"])
        directions.append(observation["direction"])
        actions.append(action)
        rewards.append(float(reward))
        random_actions.append(is_random)
        told = None if action == suggested else action
        if terminated or truncated:
            break
    return BotEpisode(
        plan=plan,
        images=np.asarray(images, dtype=np.uint8),
        directions=np.asarray(directions, dtype=np.int64),
        mission=mission,
        actions=np.asarray(actions, dtype=np.int64),
        rewards=np.asarray(rewards, dtype=np.float64),
        random_actions=np.asarray(random_actions, dtype=bool),
        terminated=bool(terminated),
        truncated=bool(truncated),
        bot_gave_up=gave_up,
        noise_probability=probability,
    )


def _run_chunk(item: tuple[int, list[EpisodePlan], float]) -> tuple[int, list[BotEpisode]]:
    start, plans, noise_probability = item
    return start, [run_bot_episode(plan, noise_probability) for plan in plans]



def show_progress(progress: bool | None) -> bool:
    """``progress`` as given, or (``None``) whether stderr is a terminal."""
    if progress is None:
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return bool(progress)


def generate_bot_episodes(
    plans: Sequence[EpisodePlan],
    *,
    workers: int | None = 1,
    progress: bool | None = None,
    noise_probability: float = NOISE_STEP_PROBABILITY,
) -> list[BotEpisode]:
    """Play every plan, in ``workers`` processes (``None``: all cores); the result is in plan order and the same for
    any ``workers``. A tqdm bar on stderr counts episodes (``progress=None``: only when stderr is a terminal)."""
    from tqdm import tqdm

    if workers is None:
        workers = os.cpu_count() or 1
    workers = _check_count("workers", workers, 1)
    if not 0.0 <= float(noise_probability) <= 1.0:
        raise ValueError(f"noise_probability must be in [0, 1]; got {noise_probability!r}")
    plans = list(plans)
    chunks = [(start, plans[start : start + _CHUNK], float(noise_probability))
              for start in range(0, len(plans), _CHUNK)]
    bar = tqdm(total=len(plans), desc="BabyAI bot episodes", unit="episode", disable=not show_progress(progress))
    return run_in_chunks(_run_chunk, chunks, len(plans), workers, bar)


def quiet_reset(env: gym.Env) -> gym.Env:
    """``env`` whose resets print nothing (Minigrid's "Sampling rejected" lines)."""
    return _QuietReset(env)


def replay_episode(env, seed: int, actions: np.ndarray) -> tuple[dict[str, Any], bool]:
    """Reset ``env`` with ``seed`` and take ``actions``.

    Returns:
        ``({"direction": (T + 1,), "image": (T + 1, 7, 7, 3), "mission": [T + 1 strings]}, success)``, success being
        a positive reward on a terminating step.
    """
    with contextlib.redirect_stdout(io.StringIO()):
        observation, _ = env.reset(seed=int(seed))
    seen = [observation]
    success = False
    for action in np.asarray(actions).reshape(-1):
        observation, reward, terminated, truncated, _ = env.step(int(action))
        seen.append(observation)
        success = bool(terminated and reward > 0)
        if terminated or truncated:
            break
    return ({"direction": np.asarray([o["direction"] for o in seen]),
             "image": np.asarray([o["image"] for o in seen]),
             "mission": [o["mission"] for o in seen]}, success)
