"""The episode pool: demonstrations as imitation ``Trajectory``s, each with where it came from.

An :class:`EpisodePool` is what the datasets wing reads from and writes to Minari datasets, and what the
learner-centric experiment consumes: ``N`` episodes in a fixed order, and for each its id in its source dataset, its
reset seed, its task group (the source dataset's id) and Minari's per-episode metadata and infos.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:  # imitation imports torch; only the constructors below touch its types
    from imitation.data.types import Trajectory

__all__ = ["EpisodePool"]


@dataclass(frozen=True, eq=False)  # eq=False: arrays and trajectories have no single truth value
class EpisodePool:
    """``N`` demonstrations with their provenance, validated on construction.

    Shapes, for episode ``i`` of ``L_i`` actions:

    * ``trajectories[i].obs``: ``(L_i + 1, *obs_shape)`` in the observation space's dtype; a ``Discrete`` space gives
      ``(L_i + 1,)`` int64, ``Text`` a ``(L_i + 1,)`` object array of ``str``, a ``Dict`` space an imitation
      ``DictObs`` of such arrays, one per key;
    * ``trajectories[i].acts``: ``(L_i, *act_shape)``; ``infos`` is ``None`` (Minari's infos are in ``infos``);
      ``terminal`` is whether the episode's last step terminated (not truncated);
    * ``trajectories[i].rews`` (a ``TrajectoryWithRew``): ``(L_i,)`` float rewards. A pool read from Minari always
      has rewards; one built in memory may hold plain ``Trajectory``s (then ``has_rewards`` is false).

    Attributes:
        trajectories: ``N`` imitation ``Trajectory`` / ``TrajectoryWithRew`` objects.
        episode_ids: ``(N,)`` int64, each episode's id in its source dataset (read-only).
        seeds: ``N`` reset seeds, ``int`` or ``None``.
        groups: ``N`` task groups, the source dataset's id (``str``).
        metadata: ``N`` dicts, the episode's metadata as Minari stores it (``id``, ``total_steps``, ``seed``,
            ``options``, and any custom keys), with NumPy values turned into plain Python (lists, ints, floats).
        infos: ``N`` dicts ``name -> array`` of the episode's step infos as Minari stores them: first axis
            ``L_i + 1`` (the reset's info, then one per step) for datasets collected by Minari.
        observation_space, action_space: the spaces every episode lies in.
        env_specs: ``group -> EnvSpec`` (or ``None`` where the environment is unknown), one per group.
    """

    trajectories: tuple
    episode_ids: np.ndarray
    seeds: tuple
    groups: tuple
    metadata: tuple
    infos: tuple
    observation_space: gym.Space
    action_space: gym.Space
    env_specs: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        from imitation.data.types import Trajectory

        n = len(self.trajectories)
        object.__setattr__(self, "trajectories", tuple(self.trajectories))
        ids = np.array(self.episode_ids, dtype=np.int64).reshape(-1)
        ids.setflags(write=False)
        object.__setattr__(self, "episode_ids", ids)
        for name in ("seeds", "groups", "metadata", "infos"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("episode_ids", "seeds", "groups", "metadata", "infos"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have one entry per trajectory ({n}); got {len(getattr(self, name))}")
        for i, trajectory in enumerate(self.trajectories):
            if not isinstance(trajectory, Trajectory):
                raise ValueError(f"trajectories[{i}] must be an imitation Trajectory; got {type(trajectory).__name__}")
        for i, trajectory in enumerate(self.trajectories):  # one check, where every reader and builder passes
            what = _not_finite(trajectory)
            if what:
                raise ValueError(f"episode {int(ids[i])} of group {self.groups[i]!r} (pool index {i}) has NaN or "
                                 f"infinite {what}; a demonstration's actions and observations must be finite")
        for i, seed in enumerate(self.seeds):
            if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
                raise ValueError(f"seeds[{i}] must be an int or None; got {seed!r}")
        if any(not isinstance(g, str) for g in self.groups):
            raise ValueError("groups must be strings (the source dataset ids)")
        specs = dict(self.env_specs)
        missing = sorted(set(self.groups) - set(specs))
        for group in missing:  # a group without a known environment
            specs[group] = None
        object.__setattr__(self, "env_specs", specs)  # a plain dict, so that a pool pickles to worker processes
        seen = set()
        for group, episode_id in zip(self.groups, ids.tolist()):
            if (group, episode_id) in seen:
                raise ValueError(f"episode {episode_id} of group {group!r} appears twice")
            seen.add((group, episode_id))
        if not isinstance(self.observation_space, gym.Space) or not isinstance(self.action_space, gym.Space):
            raise ValueError("observation_space and action_space must be gymnasium spaces")

    # ------------------------------------------------------------------ building
    @classmethod
    def from_trajectories(
        cls,
        trajectories: Sequence[Trajectory],
        observation_space: gym.Space,
        action_space: gym.Space,
        *,
        group: str = "",
        seeds: Sequence[int | None] | None = None,
        metadata: Sequence[dict] | None = None,
        infos: Sequence[dict] | None = None,
        env_spec: gym.envs.registration.EnvSpec | None = None,
    ) -> EpisodePool:
        """A one-group pool of ``trajectories`` (episode ids ``0 .. N-1``; seeds ``None``, empty metadata and
        infos unless given)."""
        n = len(trajectories)
        return cls(
            trajectories=tuple(trajectories),
            episode_ids=np.arange(n, dtype=np.int64),
            seeds=tuple(seeds) if seeds is not None else (None,) * n,
            groups=(group,) * n,
            metadata=tuple(metadata) if metadata is not None else ({},) * n,
            infos=tuple(infos) if infos is not None else ({},) * n,
            observation_space=observation_space,
            action_space=action_space,
            env_specs={group: env_spec},
        )

    @classmethod
    def concatenate(cls, pools: Sequence[EpisodePool]) -> EpisodePool:
        """One pool of several, in order; their spaces must be equal and their groups distinct."""
        if not pools:
            raise ValueError("concatenate needs at least one pool")
        first = pools[0]
        specs: dict = {}
        for pool in pools:
            for name in ("observation_space", "action_space"):
                if getattr(pool, name) != getattr(first, name):
                    raise ValueError(
                        f"the {name.replace('_', ' ')}s differ: {_one_line(getattr(first, name))} in group "
                        f"{first.groups[0] if first.groups else ''!r}, {_one_line(getattr(pool, name))} in group "
                        f"{pool.groups[0] if pool.groups else ''!r}"
                    )
            for group, spec in pool.env_specs.items():
                if group in specs:
                    raise ValueError(f"group {group!r} appears in two pools")
                specs[group] = spec
        return cls(
            trajectories=sum((p.trajectories for p in pools), ()),
            episode_ids=np.concatenate([p.episode_ids for p in pools]),
            seeds=sum((p.seeds for p in pools), ()),
            groups=sum((p.groups for p in pools), ()),
            metadata=sum((p.metadata for p in pools), ()),
            infos=sum((p.infos for p in pools), ()),
            observation_space=first.observation_space,
            action_space=first.action_space,
            env_specs=specs,
        )

    def select(self, indices: Sequence[int] | np.ndarray) -> EpisodePool:
        """The pool of episodes ``indices`` (in that order); groups keep their environment specs."""
        index = np.asarray(indices, dtype=np.int64).reshape(-1)
        if index.size and (index.min() < -len(self) or index.max() >= len(self)):
            raise ValueError(f"indices must be in [0, {len(self) - 1}]")
        groups = tuple(self.groups[i] for i in index.tolist())
        return EpisodePool(
            trajectories=tuple(self.trajectories[i] for i in index.tolist()),
            episode_ids=self.episode_ids[index],
            seeds=tuple(self.seeds[i] for i in index.tolist()),
            groups=groups,
            metadata=tuple(self.metadata[i] for i in index.tolist()),
            infos=tuple(self.infos[i] for i in index.tolist()),
            observation_space=self.observation_space,
            action_space=self.action_space,
            env_specs={g: self.env_specs[g] for g in dict.fromkeys(groups)},
        )

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.trajectories)

    @property
    def group_names(self) -> tuple:
        """The distinct groups, in order of first appearance."""
        return tuple(dict.fromkeys(self.groups))

    @property
    def lengths(self) -> np.ndarray:
        """``(N,)`` int64, actions per episode."""
        return np.array([len(t.acts) for t in self.trajectories], dtype=np.int64)

    @property
    def has_rewards(self) -> bool:
        """Whether every episode carries rewards (``TrajectoryWithRew``)."""
        return all(hasattr(t, "rews") for t in self.trajectories)

    @property
    def returns(self) -> np.ndarray:
        """``(N,)`` float64 undiscounted returns (ValueError when the pool has no rewards)."""
        if not self.has_rewards:
            raise ValueError("this pool has no rewards (plain Trajectory objects), so no returns")
        return np.array([float(np.sum(t.rews, dtype=np.float64)) for t in self.trajectories], dtype=np.float64)

    @property
    def env_spec(self) -> gym.envs.registration.EnvSpec | None:
        """The environment spec every group shares, or ``None`` (unknown, or groups with different ones)."""
        specs = list(self.env_specs.values())
        if not specs or specs[0] is None:
            return None
        return specs[0] if all(s == specs[0] for s in specs[1:]) else None

    def make_env(self, group: str | None = None, **kwargs: Any) -> gym.Env:
        """``gym.make`` of ``group``'s environment spec (default: the spec all groups share)."""
        spec = self.env_spec if group is None else self.env_specs.get(group)
        if group is not None and group not in self.env_specs:
            raise ValueError(f"unknown group {group!r}; groups: {', '.join(self.group_names)}")
        if spec is None:
            where = f"group {group!r}" if group is not None else "this pool (give a group, or an env id)"
            raise ValueError(f"no environment spec is known for {where}")
        return gym.make(spec, **kwargs)

    def index_of(self, group: str, episode_id: int) -> int:
        """The position in the pool of episode ``episode_id`` of ``group``."""
        for i, (g, e) in enumerate(zip(self.groups, self.episode_ids.tolist())):
            if g == group and e == int(episode_id):
                return i
        raise ValueError(f"no episode {episode_id} in group {group!r}")


def _not_finite(trajectory: Trajectory) -> str:
    """``"actions"``, ``"observations"`` (or ``"observations[key]"``) where a float array of ``trajectory`` holds NaN
    or an infinity, else ``""``."""
    def bad(array: Any) -> bool:
        array = np.asarray(array)
        return np.issubdtype(array.dtype, np.inexact) and not np.isfinite(array).all()

    if bad(trajectory.acts):
        return "actions"
    obs = trajectory.obs
    if hasattr(obs, "items") and not isinstance(obs, np.ndarray):  # an imitation DictObs
        return next((f"observations[{key!r}]" for key, value in obs.items() if bad(value)), "")
    return "observations" if bad(obs) else ""


def _one_line(space: gym.Space) -> str:
    return " ".join(str(space).split())
