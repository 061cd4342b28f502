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

Each member is a fresh learner of the command's ``--policy`` (a
:class:`~curteach_teaching.learners.dataset_learner.LearnerFactory`: BC's SB3 policies, ``diffusion``, a plug-in),
trained by the curricula's own adapter (:func:`~curteach_teaching.curriculum.adapters.learner.learner_curriculum`:
variant Agn, a fixed number of steps) with its own generators, and asked its per-step log-likelihoods (a diffusion
learner's minus its denoising loss); so the ensemble is a function of the data, the settings and ``seed``. (The one
import of the curriculum wing from the datasets wing, listed in tests/project/test_import_graph.py.) With
``fit="batched"`` the K members of a BC policy that
:func:`~curteach_teaching.learners.batched_members.batch_reason` accepts (an MLP or a CNN) train as one batched
model (:mod:`~curteach_teaching.learners.batched_members`: the same members, batches and Adam, summed in another
order, so the scores agree with the sequential fit's to rounding, not bit for bit; a cache of its own); any other
learner falls back to the members one after another, and says so.

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
from curteach_teaching.difficulty import MIN_LOG_PROB
from curteach_teaching.digests import trajectories_digest

__all__ = ["DEFAULT_BATCHES", "FITS", "EnsembleScore", "EnsembleScores", "EnsembleTeacher"]

#: how the members are fitted: one after another, or as one batched model (rank's default; see the module docstring)
FITS = ("sequential", "batched")

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
        fit: ``"sequential"`` (the members one after another) or ``"batched"`` (as one batched model where the
            policy allows; see the module docstring).

    Raises:
        ValueError: any setting out of its range.
    """

    size: int = 5
    batches: int = 500
    batch_size: int = 64
    learning_rate: float = 1e-3
    seed: int = 0
    fit: str = "sequential"

    def __post_init__(self) -> None:
        check_int("ensemble size", self.size, 2)
        check_int("ensemble batches", self.batches, 1)
        check_int("ensemble batch_size", self.batch_size, 1)
        check_int("ensemble seed", self.seed, 0)
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (np.isfinite(lr) and lr > 0):
            raise ValueError(f"ensemble learning_rate must be a finite number > 0; got {lr!r}")
        if self.fit not in FITS:
            raise ValueError(f"ensemble fit must be one of {', '.join(FITS)}; got {self.fit!r}")

    def halves(self, n: int) -> np.ndarray:
        """``(K, N)`` bool: member ``k``'s half, ``ceil(N / 2)`` demonstrations drawn without replacement."""
        in_bag = np.zeros((self.size, n), dtype=bool)
        for k in range(self.size):
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, k, 0]))
            in_bag[k, rng.permutation(n)[: -(-n // 2)]] = True
        return in_bag

    def member_seeds(self, k: int) -> tuple[int, int]:
        """``(net_seed, batch_seed)`` of member ``k``: its weights' and its batches' seeds."""
        net_seed, batch_seed = (int(s.generate_state(1)[0])
                                for s in np.random.SeedSequence([self.seed, k, 1]).spawn(2))
        return net_seed, batch_seed

    def fit_member(self, k: int, demonstrations: Sequence[Any], in_bag: np.ndarray, learner: Callable[..., Any]) -> Any:
        """Member ``k``: a fresh learner ``learner(net_seed, rng=..., batch_size=..., learning_rate=...)`` (a
        :class:`~curteach_teaching.learners.dataset_learner.LearnerFactory`) trained on its half by the curricula's
        adapter (Agn, :attr:`batches` steps); returns the learner."""
        from curteach_teaching.curriculum.adapters.learner import learner_curriculum

        net_seed, batch_seed = self.member_seeds(k)
        member = learner(net_seed, rng=np.random.default_rng(batch_seed), batch_size=self.batch_size,
                         learning_rate=self.learning_rate)
        half = [demonstrations[i] for i in np.flatnonzero(in_bag)]
        curriculum = learner_curriculum(member, half, batch_size=self.batch_size, variant="Agn",
                                        rng=np.random.default_rng(batch_seed), log=False,
                                        steps_per_epoch=self.batches)
        curriculum.train(1)
        return member

    def _sequential(self, demonstrations: list, in_bag: np.ndarray, learner: Callable[..., Any],
                    progress: bool) -> np.ndarray:
        """``(K, N)`` each member's mean per-step log-likelihood of each demonstration, the members trained one after
        another."""
        from imitation.data import rollout, types

        from curteach_teaching.curriculum.index import DemonstrationIndex
        from curteach_teaching.difficulty import sum_per_demonstration
        from curteach_teaching.learners.windows import step_log_likelihoods

        index = DemonstrationIndex.from_trajectories(demonstrations)
        transitions = rollout.flatten_trajectories(demonstrations)
        log_likelihood = np.empty((self.size, len(demonstrations)))
        members = range(self.size)
        if progress:
            from tqdm.auto import tqdm

            members = tqdm(members, desc="ensemble teacher", unit="member", leave=False)
        for k in members:
            member = self.fit_member(k, demonstrations, in_bag[k], learner)
            per_step = step_log_likelihoods(member, types.maybe_unwrap_dictobs(transitions.obs), transitions.acts,
                                            index.lengths)
            # a NaN step (a diverged network) counts as the floor, as the curricula's learner difficulty does
            per_demo = sum_per_demonstration(np.asarray(per_step, dtype=np.float64), index.demo_of_transition,
                                             index.n_demonstrations, MIN_LOG_PROB)
            if not np.isfinite(per_demo).all():
                raise ValueError(f"ensemble member {k} gave log-likelihoods that are not finite (did BC diverge? "
                                 "try a smaller learning rate)")
            log_likelihood[k] = per_demo / index.lengths
        return log_likelihood

    def _batched(self, demonstrations: list, in_bag: np.ndarray, learner: Callable[..., Any],
                 say: Callable[[str], None] | None) -> np.ndarray | None:
        """``(K, N)`` as :meth:`_sequential`'s, the members trained as one batched model; ``None`` (said) where the
        learner's policy cannot be batched."""
        from curteach_teaching.learners.batched_members import batch_reason, batched_log_likelihoods

        first = learner(0)
        policy = getattr(first, "policy", None)
        reason = ("the learner is not BC on an SB3 policy" if policy is None or not hasattr(first, "bc_trainer")
                  else batch_reason(policy))
        if reason is not None:
            if say is not None:
                say(f"ensemble teacher: the members train one after another ({reason})")
            return None
        device = getattr(learner, "device", "cpu")
        return batched_log_likelihoods(demonstrations, in_bag, lambda seed: learner(seed).policy, seed=self.seed,
                                       batches=self.batches, batch_size=self.batch_size,
                                       learning_rate=self.learning_rate, device=device)

    def cache_file(self, demonstrations: Sequence[Any], cache: str | os.PathLike, label: str = "") -> Path:
        """The file in the folder ``cache`` that holds (or will hold) the scores of ``demonstrations`` under these
        settings and ``label``: ``ensemble-<digest>.npz``."""
        # the data's digest covers the observations too: a cache of other observations with the same actions is
        # another cache (an earlier version keyed it by the actions alone)
        return self.cache_path(cache, trajectories_digest(demonstrations), label)

    def cache_path(self, cache: str | os.PathLike, data: str, label: str = "") -> Path:
        """:meth:`cache_file` for demonstrations whose digest is ``data``
        (:func:`~curteach_teaching.digests.trajectories_digest`)."""
        fields = asdict(self)
        if fields["fit"] == "sequential":
            del fields["fit"]  # the key of every cache written before the batched fit
        else:
            # the written-out step (learners.batched_gaussian_step) rounds otherwise than the first batched fit did
            # (about 1e-7): its caches are not the earlier batched fit's
            fields["batched_step"] = 2
        key = {**fields, "data": data, "label": label}
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

    def scores(self, demonstrations: Sequence[Any], learner: Callable[..., Any], *,
               cache: str | os.PathLike | None = None, label: str = "", progress: bool = False,
               say: Callable[[str], None] | None = None) -> EnsembleScores:
        """Fit the members and score every demonstration (see the module docstring).

        Args:
            demonstrations: the N imitation ``Trajectory`` objects (N >= 2).
            learner: the members' :class:`~curteach_teaching.learners.dataset_learner.LearnerFactory` (their kind,
                spaces and device; the device is not part of the cache key: the scores do not depend on it beyond
                rounding).
            cache: a folder: read the scores from it when they were computed for the same data, settings and
                ``label`` (e.g. the policy's kind), else compute and write them there; a damaged file there
                (:meth:`read_cache`) is fitted again and replaced.
            label: what else distinguishes the cached scores (the policy), part of the cache key.
            progress: a bar over the members.
            say: gets its lines (default: nothing is said): ``ensemble teacher: K BC policies x B steps (cached in
                C)`` first (in a batch job's log the fit is otherwise minutes of silence), one when the cached file
                is damaged, and ``ensemble teacher ready (read from the cache)`` or ``(fitted in S s)`` last.

        Returns:
            The :class:`EnsembleScores`.

        Raises:
            ValueError: fewer than two demonstrations, or a member whose log-likelihoods are not finite.
        """
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
        in_bag = self.halves(n)
        log_likelihood = None
        if self.fit == "batched":
            log_likelihood = self._batched(demonstrations, in_bag, learner, say)
        if log_likelihood is None:
            log_likelihood = self._sequential(demonstrations, in_bag, learner, progress)
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
                           f"dataset-bc's --max-batches; rank: {DEFAULT_BATCHES})"),
               ScoreOption("ensemble_fit", str, "sequential", "score ensemble: how its members train: sequential "
                           "(one after another) or batched (as one batched model where the policy is an MLP or a "
                           "CNN trained by BC: the same members to rounding, several times faster; default "
                           "sequential, rank's batched)", unkeyed="sequential"))

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
        """The score of ``options``' ``ensemble_size``, ``ensemble_batches``, ``ensemble_fit``, ``batch_size``,
        ``learning_rate`` and ``max_batches`` (each where given)."""
        known = ("ensemble_size", "ensemble_batches", "ensemble_fit", "batch_size", "learning_rate", "max_batches")
        return cls(**{name: options[name] for name in known if name in options})

    def teacher(self, seed: int) -> EnsembleTeacher:
        """The :class:`EnsembleTeacher` these settings fit with ``seed`` (its fields key the cache)."""
        return EnsembleTeacher(size=self.values["ensemble_size"], batches=self.batches, batch_size=self.batch_size,
                               learning_rate=self.learning_rate, seed=seed, fit=self.values["ensemble_fit"])

    def describe(self) -> dict:
        """``size``, ``batches``, ``batch_size``, ``learning_rate`` and ``fit`` as the members train
        (``rank.json``)."""
        return {"size": self.values["ensemble_size"], "batches": self.batches, "batch_size": self.batch_size,
                "learning_rate": self.learning_rate, "fit": self.values["ensemble_fit"]}

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` the held-out difficulty of every episode of ``data`` (:meth:`EnsembleTeacher.scores`, cached in
        ``cache`` under ``label``)."""
        return self.teacher(seed).scores(list(data.trajectories), learner, cache=cache, label=label,
                                         progress=progress, say=say).difficulty
