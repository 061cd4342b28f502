"""The prepared data both ``rank`` and ``dataset-bc`` read: the pool encoded for the learner, with its scores.

The driver reads the pool once (:func:`~curteach_teaching.datasets.read_pool`) and prepares it once
(:func:`~curteach_teaching.datasets.prepare.prepare`: the observation codec, the encoded trajectories, every plain
score read, then :func:`~curteach_teaching.datasets.prepare.fit_scores` fits every trained score once, cached); the
result, a :class:`PreparedData`, goes to the workers inside the experiment (a process pool pickles it once per
worker; Ray sends it with the experiment). A worker never reads a dataset by path and never writes a file, so a
cluster needs no shared disk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curteach_teaching.digests import feed

__all__ = ["PreparedData", "pool_digest", "success_defined"]


def pool_digest(pool: Any) -> str:
    """SHA-256 of everything a run may read of the pool: each episode's group, id and seed, its observations,
    actions, rewards and terminal flag, its metadata (robomimic's filter keys, LeRobot's tasks, ...) and its step
    infos, in the pool's order. It names the data in the settings, not where the data is stored, so a moved dataset
    resumes, and a dataset whose observations or labels changed is another sweep's (an earlier version digested the
    actions and rewards only: ``experiments/dataset_bc/upgrade_digest.py``)."""
    digest = hashlib.sha256(b"curteach pool v2\n")
    for group, episode_id, seed, trajectory, metadata, infos in zip(
            pool.groups, pool.episode_ids.tolist(), pool.seeds, pool.trajectories, pool.metadata, pool.infos,
            strict=True):
        for value in (group, episode_id, seed, trajectory.obs, trajectory.acts, getattr(trajectory, "rews", None),
                      bool(trajectory.terminal), metadata, infos):
            feed(digest, value)
    return digest.hexdigest()


def success_defined(pool: Any) -> bool:
    """Whether success is reported: the data's step infos hold ``success`` or ``is_success`` (the env reports it, as
    Meta-World's and Gymnasium-Robotics' do), or an episode's success can be read off its rewards: every episode is
    rewarded on its last step only (as BabyAI's and Minigrid's are). Elsewhere (CartPole rewards every step, its last
    one too) success is not reported."""
    if any(key in info for info in pool.infos for key in ("success", "is_success")):
        return True
    if not pool.has_rewards:
        return False
    return all(not np.any(np.asarray(t.rews)[:-1]) for t in pool.trajectories)


@dataclass(frozen=True, eq=False)
class PreparedData:
    """The pool as the scores and the runs read it.

    Attributes:
        trajectories: ``N`` imitation trajectories with the policy's observations (the codec's encoding; the
            pool's own where nothing is trained: ``codec`` is then ``None``).
        lengths: ``(N,)`` float64 actions per episode.
        groups: ``N`` the dataset of each episode; seeds: ``N`` its reset seed (``int`` or ``None``).
        env_specs: ``group -> EnvSpec`` of the environment each dataset is evaluated in.
        codec: the :class:`~curteach_teaching.datasets.codecs.codec.Codec` (built once), or ``None``.
        action_space: the pool's action space.
        task_scores: ``task -> (N,)`` float64 difficulties of every task score read (trained ones included once
            :func:`~curteach_teaching.datasets.prepare.fit_scores` has run).
        digest: :func:`pool_digest` of the pool it was made from (``""`` where nothing is trained: ``rank`` by a
            plain score).
        held_out: without an environment, the ``M`` held-out episodes as the policy reads them (never trained on,
            never scored by a teacher; ``dataset-bc``'s held-out evaluation); empty with one.
        held_out_groups: ``M`` their groups.
        split: the held-out split (pool indices of the training part, which every other attribute describes, and of
            the held-out one), or ``None``.
        metadata: ``N`` each episode's metadata (robomimic's filter keys, LeRobot's tasks, ...), for trained scores.
    """

    trajectories: tuple
    lengths: np.ndarray
    groups: tuple
    seeds: tuple
    env_specs: Mapping
    codec: Any
    action_space: Any
    task_scores: Mapping = field(default_factory=dict)
    digest: str = ""
    held_out: tuple = ()
    held_out_groups: tuple = ()
    split: Any = None
    metadata: tuple = ()

    def __len__(self) -> int:
        return len(self.trajectories)

    def make_env(self, group: str) -> Any:
        """``gym.make`` of ``group``'s environment (as :meth:`~curteach_teaching.datasets.EpisodePool.make_env`)."""
        import gymnasium as gym

        spec = self.env_specs.get(group)
        if spec is None:
            raise ValueError(f"no environment spec is known for group {group!r}")
        return gym.make(spec)

    def with_scores(self, scores: Mapping[str, np.ndarray]) -> PreparedData:
        """A copy with ``scores`` added to :attr:`task_scores`."""
        import dataclasses

        return dataclasses.replace(self, task_scores={**self.task_scores, **scores})

    def sums(self, tasks) -> dict:
        """``task -> (N,)`` the weighted sums among ``tasks`` (``ensemble+100*not:success``) not in
        :attr:`task_scores` yet whose terms all are (a trained term is there once fitted): combined from those terms'
        values (:func:`~curteach_teaching.datasets.scores.sums.combine`).

        Raises:
            ValueError: a sum that is not finite (weights so large that it overflows).
        """
        from curteach_teaching.datasets.scores.sums import combine, parse_sum

        out = {}
        for task in tasks:
            terms = parse_sum(task)
            if task in self.task_scores or terms is None or any(t.name not in self.task_scores for t in terms):
                continue
            values = combine(terms, self.task_scores)
            if not np.isfinite(values).all():
                raise ValueError(f"task score {task!r} is not finite for every episode: its weights are too large")
            out[task] = values
        return out
