"""The first trained score, ``ensemble``: BC policies fitted on bootstrap halves of the data, each demonstration
scored by the members that did not see it (a teacher for datasets without an expert).

Cur and Cur-T need the teacher's difficulty ``log Psi^E`` of every demonstration; most datasets come without the
policy that made them. :class:`EnsembleTeacher` stands in for it: ``K`` BC policies, member ``k`` fitted on a random
half ``B_k`` of the demonstrations (drawn without replacement, each member its own half), then every demonstration is
scored by the members that did *not* see it::

    log Psi^E(xi_i) = - mean_{k : i not in B_k}  (1 / L_i) sum_tau log pi_k(a_tau | s_tau)

the negative mean per-step log-likelihood of its actions under the members it was held out from (all ``K`` members
where it was in every half, which happens with probability ``2^-K``); for continuous actions a log-density, through
the action seam (:mod:`curteach_teaching.learners.actions`), of the actions as given (never clipped). Held-out
scores are what makes this a quality score: a member that trained on a bad demonstration may have learned its
mistakes, one that did not rates them as unlikely. Per step, so that a long demonstration is not harder for its
length alone.

Cost: ``K`` trainings of ``batches`` optimizer steps each plus ``K`` scoring passes over the data; with ``cache`` the
scores are written once per data, settings and seed (a ``.npz`` named by their digest, written atomically) and read
back after; a damaged file (truncated, say, by a full disk) is fitted again and replaced.

Each member trains through :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` (variant Agn, a fixed
number of steps) with its own generators, so the ensemble is a function of the data, the settings and ``seed``. (The
one import of the curriculum wing from the datasets wing, listed in tests/project/test_import_graph.py: until the
learner registry trains the members, they train as the curricula's BC does.)

:class:`EnsembleScore` is its entry in the score registry
(:mod:`~curteach_teaching.datasets.scores.trained`'s protocol): options ``ensemble_size`` and ``ensemble_batches``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.datasets.scores.trained import ScoreOption, TrainedScore
from curteach_teaching.digests import trajectories_digest

__all__ = ["DEFAULT_BATCHES", "EnsembleScore", "EnsembleScores", "EnsembleTeacher"]

#: optimizer steps per member where neither ``ensemble_batches`` nor the caller's ``max_batches`` says (``rank``)
DEFAULT_BATCHES = 500


@dataclass(frozen=True)
class EnsembleScores:
    """What an :class:`EnsembleTeacher` found.

    Attributes:
        difficulty: ``(N,)`` ``log Psi^E`` of every demonstration (larger = less likely under the held-out members).
        log_likelihood: ``(K, N)`` each member's mean per-step log-likelihood of each demonstration.
        in_bag: ``(K, N)`` bool, demonstration ``i`` was in member ``k``'s half.
    """

    difficulty: np.ndarray
    log_likelihood: np.ndarray
    in_bag: np.ndarray


def _held_out_difficulty(log_likelihood: np.ndarray, in_bag: np.ndarray) -> np.ndarray:
    held_out = ~in_bag
    counts = held_out.sum(axis=0)
    mean_out = np.where(held_out, log_likelihood, 0.0).sum(axis=0) / np.maximum(counts, 1)
    # a demonstration in every member's half has no held-out score: all members' mean stands in
    return -np.where(counts > 0, mean_out, log_likelihood.mean(axis=0))


@dataclass(frozen=True)
class EnsembleTeacher:
    """``size`` BC policies on bootstrap halves; :meth:`scores` gives every demonstration's ``log Psi^E``.

    Args:
        size: K, the number of members (>= 2, so that most demonstrations are held out from some member).
        batches: optimizer steps per member (>= 1).
        batch_size: transitions per step; learning_rate: Adam's.
        seed: the seed of the halves, the members' initialisations and their batches.

    Raises:
        ValueError: any setting out of its range.
    """

    size: int = 5
    batches: int = 500
    batch_size: int = 64
    learning_rate: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("ensemble size", self.size, 2)
        check_int("ensemble batches", self.batches, 1)
        check_int("ensemble batch_size", self.batch_size, 1)
        check_int("ensemble seed", self.seed, 0)
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (np.isfinite(lr) and lr > 0):
            raise ValueError(f"ensemble learning_rate must be a finite number > 0; got {lr!r}")

    def halves(self, n: int) -> np.ndarray:
        """``(K, N)`` bool: member ``k``'s half, ``ceil(N / 2)`` demonstrations drawn without replacement."""
        in_bag = np.zeros((self.size, n), dtype=bool)
        for k in range(self.size):
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, k, 0]))
            in_bag[k, rng.permutation(n)[: -(-n // 2)]] = True
        return in_bag

    def fit_member(self, k: int, demonstrations: Sequence[Any], in_bag: np.ndarray,
                   make_policy: Callable[[int], Any], observation_space: Any, action_space: Any, *,
                   device: Any = "cpu") -> Any:
        """Member ``k``: a fresh policy ``make_policy(seed)`` trained by BC (Adam) on its half, on ``device``;
        returns the policy."""
        from curteach_teaching.curriculum.adapters.bc import CurriculumBC
        from curteach_teaching.learners.factory import make_bc_trainer

        net_seed, batch_seed = (int(s.generate_state(1)[0])
                                for s in np.random.SeedSequence([self.seed, k, 1]).spawn(2))
        policy = make_policy(net_seed)
        trainer = make_bc_trainer(policy, observation_space, action_space, batch_size=self.batch_size,
                                  learning_rate=self.learning_rate, rng=np.random.default_rng(batch_seed),
                                  device=device)
        half = [demonstrations[i] for i in np.flatnonzero(in_bag)]
        curriculum = CurriculumBC(trainer, half, variant="Agn", rng=np.random.default_rng(batch_seed), log=False,
                                  steps_per_epoch=self.batches)
        curriculum.train(1)
        return policy

    def cache_file(self, demonstrations: Sequence[Any], cache: str | os.PathLike, label: str = "") -> Path:
        """The file in the folder ``cache`` that holds (or will hold) the scores of ``demonstrations`` under these
        settings and ``label``: ``ensemble-<digest>.npz``."""
        # the data's digest covers the observations too: a cache of other observations with the same actions is
        # another cache (an earlier version keyed it by the actions alone)
        return self.cache_path(cache, trajectories_digest(demonstrations), label)

    def cache_path(self, cache: str | os.PathLike, data: str, label: str = "") -> Path:
        """:meth:`cache_file` for demonstrations whose digest is ``data``
        (:func:`~curteach_teaching.digests.trajectories_digest`)."""
        key = {**asdict(self), "data": data, "label": label}
        return Path(cache) / f"ensemble-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]}.npz"

    def read_cache(self, path: str | os.PathLike, n: int) -> tuple[EnsembleScores | None, str]:
        """The scores of ``n`` demonstrations cached in ``path`` by :meth:`scores`.

        Returns:
            ``(scores, "")`` for an intact file; ``(None, "missing")`` where there is none; ``(None, reason)`` for a
            damaged one (truncated, not an ``.npz``, an array missing, of the wrong shape or not finite), which
            :meth:`scores` fits again and replaces.
        """
        path = Path(path)
        if not path.exists():
            return None, "missing"
        try:
            with np.load(path, allow_pickle=False) as saved:
                found = EnsembleScores(np.array(saved["difficulty"]), np.array(saved["log_likelihood"]),
                                       np.array(saved["in_bag"]))
        except Exception as error:
            # a damaged zip raises nearly anything from zipfile or numpy's parser (BadZipFile, EOFError, KeyError,
            # ValueError, NotImplementedError for a garbled compression method, OSError); each means the same here:
            # not a usable cache, fit again
            return None, f"{type(error).__name__}: {error}"
        shapes = (found.difficulty.shape, found.log_likelihood.shape, found.in_bag.shape)
        if shapes != ((n,), (self.size, n), (self.size, n)) or found.in_bag.dtype != bool:
            return None, f"arrays of shapes {shapes}, not those of {self.size} members and {n} demonstrations"
        if not (np.isfinite(found.difficulty).all() and np.isfinite(found.log_likelihood).all()):
            return None, "scores that are not finite"
        return found, ""

    def scores(self, demonstrations: Sequence[Any], make_policy: Callable[[int], Any], observation_space: Any,
               action_space: Any, *, cache: str | os.PathLike | None = None, label: str = "",
               progress: bool = False, device: Any = "cpu",
               say: Callable[[str], None] | None = None) -> EnsembleScores:
        """Fit the members and score every demonstration (see the module docstring).

        Args:
            demonstrations: the N imitation ``Trajectory`` objects (N >= 2).
            make_policy: ``seed -> SB3 policy`` for the spaces (a fresh network per call).
            observation_space, action_space: the policies' spaces.
            cache: a folder: read the scores from it when they were computed for the same data, settings and
                ``label`` (e.g. the policy's kind), else compute and write them there; a damaged file there
                (:meth:`read_cache`) is fitted again and replaced.
            label: what else distinguishes the cached scores (the policy), part of the cache key.
            progress: a bar over the members.
            device: where the members train and score (the scores do not depend on it beyond rounding; not part of
                the cache key).
            say: gets its lines (default: nothing is said): ``ensemble teacher: K BC policies x B steps (cached in
                C)`` first (in a batch job's log the fit is otherwise minutes of silence), one when the cached file
                is damaged, and ``ensemble teacher ready (read from the cache)`` or ``(fitted in S s)`` last.

        Returns:
            The :class:`EnsembleScores`.

        Raises:
            ValueError: fewer than two demonstrations, or a member whose log-likelihoods are not finite.
        """
        from curteach_teaching.curriculum.index import DemonstrationIndex
        from curteach_teaching.curriculum.scores import policy_difficulty

        demonstrations = list(demonstrations)
        n = len(demonstrations)
        if n < 2:
            raise ValueError(f"an ensemble teacher needs at least 2 demonstrations to split in halves; got {n}")
        if say is not None:
            say(f"ensemble teacher: {self.size} BC policies x {self.batches} steps"
                + ("" if cache is None else f" (cached in {cache})"))
        started = time.perf_counter()
        path = None if cache is None else self.cache_file(demonstrations, cache, label)
        if path is not None:
            cached, problem = self.read_cache(path, n)
            if cached is not None:
                if say is not None:
                    say("ensemble teacher ready (read from the cache)")
                return cached
            if problem != "missing" and say is not None:
                say(f"ensemble teacher: the cached scores {path} are damaged ({problem}); fitting them again")
        from imitation.data import rollout

        index = DemonstrationIndex.from_trajectories(demonstrations)
        transitions = rollout.flatten_trajectories(demonstrations)
        in_bag = self.halves(n)
        log_likelihood = np.empty((self.size, n))
        members = range(self.size)
        if progress:
            from tqdm.auto import tqdm

            members = tqdm(members, desc="ensemble teacher", unit="member", leave=False)
        for k in members:
            policy = self.fit_member(k, demonstrations, in_bag[k], make_policy, observation_space, action_space,
                                     device=device)
            per_demo = -policy_difficulty(policy, transitions.obs, transitions.acts, index)
            if not np.isfinite(per_demo).all():
                raise ValueError(f"ensemble member {k} gave log-likelihoods that are not finite (did BC diverge? "
                                 "try a smaller learning rate)")
            log_likelihood[k] = per_demo / index.lengths
        result = EnsembleScores(_held_out_difficulty(log_likelihood, in_bag), log_likelihood, in_bag)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
            os.close(handle)
            try:
                with open(tmp, "wb") as f:
                    np.savez(f, difficulty=result.difficulty, log_likelihood=log_likelihood, in_bag=in_bag)
                os.replace(tmp, path)  # whole or absent: a run reading the cache never sees half a file
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        if say is not None:
            say(f"ensemble teacher ready (fitted in {time.perf_counter() - started:.0f} s)")
        return result


class EnsembleScore(TrainedScore):
    """``ensemble`` in the score registry: an :class:`EnsembleTeacher`'s held-out difficulty.

    Built by :meth:`from_options` from the commands' flags or the sweep's settings: ``ensemble_size`` (K),
    ``ensemble_batches`` (steps per member; ``None``: the caller's ``max_batches``, else :data:`DEFAULT_BATCHES`),
    and the learner's ``batch_size`` and ``learning_rate``. Its :meth:`settings` are the two options as given (what
    the fingerprints of earlier sweeps hold); the seed is the one :meth:`fit` receives.
    """

    summary = ("fitted: BC policies on bootstrap halves of the data score each episode they did not see (for "
               "datasets without an expert)")
    options = (ScoreOption("ensemble_size", int, 5, "score ensemble: BC policies on bootstrap halves (default 5)"),
               ScoreOption("ensemble_batches", int, None, "score ensemble: optimizer steps per policy (default: "
                           f"dataset-bc's --max-batches; rank: {DEFAULT_BATCHES})"))

    def __init__(self, *, batch_size: int = 64, learning_rate: float = 1e-3, max_batches: int | None = None,
                 **values: Any):
        super().__init__(**values)
        check_int("ensemble_size", self.values["ensemble_size"], 2)  # named as the options: --ensemble-size must ...
        batches = self.values["ensemble_batches"]
        if batches is not None:
            check_int("ensemble_batches", batches, 1)
        self.batches = batches if batches is not None else (max_batches or DEFAULT_BATCHES)
        self.batch_size, self.learning_rate = batch_size, learning_rate
        self.teacher(0)  # the other settings checked now, before any data is read

    @classmethod
    def from_options(cls, options):
        """The score of ``options``' ``ensemble_size``, ``ensemble_batches``, ``batch_size``, ``learning_rate`` and
        ``max_batches`` (each where given)."""
        known = ("ensemble_size", "ensemble_batches", "batch_size", "learning_rate", "max_batches")
        return cls(**{name: options[name] for name in known if name in options})

    def teacher(self, seed: int) -> EnsembleTeacher:
        """The :class:`EnsembleTeacher` these settings fit with ``seed`` (its fields key the cache)."""
        return EnsembleTeacher(size=self.values["ensemble_size"], batches=self.batches, batch_size=self.batch_size,
                               learning_rate=self.learning_rate, seed=seed)

    def describe(self) -> dict:
        """``size``, ``batches``, ``batch_size`` and ``learning_rate`` as the members train (``rank.json``)."""
        return {"size": self.values["ensemble_size"], "batches": self.batches, "batch_size": self.batch_size,
                "learning_rate": self.learning_rate}

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` the held-out difficulty of every episode of ``data`` (:meth:`EnsembleTeacher.scores`, cached in
        ``cache`` under ``label``)."""
        spaces = (data.codec.observation_space, data.action_space)
        return self.teacher(seed).scores(list(data.trajectories), learner, *spaces, cache=cache, label=label,
                                         progress=progress, device=device, say=say).difficulty
