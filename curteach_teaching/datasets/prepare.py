"""The one prepare step of ``rank`` and ``dataset-bc``: read (by the caller), check, encode, digest, score, fit
every trained score once, cache.

:func:`prepare` takes the pool a command read once and gives the :class:`~curteach_teaching.datasets.prepared.
PreparedData`: every plain score read (a bad name, field or value is one line naming the episode, before anything
trains), the observation codec (:func:`~curteach_teaching.datasets.codecs.codec_for`), the trajectories encoded by
it, the learner checked on the codec's space (not the raw one: BabyAI's missions are text) and the pool's digest.
:func:`fit_scores` then fits every trained score the names read, once, in the driver, each cached in a folder the
caller names (``DIR/teachers``), and combines the weighted sums that read them. Neither function names a score, a
codec or a format: the registries decide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from curteach_teaching.datasets.prepared import PreparedData, pool_digest
from curteach_teaching.datasets.scores.registry import (
    is_trained,
    refuse_without_environment,
    score_terms,
    task_difficulty,
    trained_terms,
)

__all__ = ["check_environment", "fit_scores", "learner_factory", "prepare"]


def check_environment(pool: Any, names: Iterable[str], split: Any = None) -> None:
    """Refuse (one line) the scores among ``names`` that need an environment where ``pool`` has none: a group
    without an env spec (robomimic files, LeRobot folders), or a held-out ``split`` (``dataset-bc`` without an
    environment, ``--env none``).

    Raises:
        ValueError: naming the scores refused and the built-in ones that need none.
    """
    specs = pool.env_specs or {}
    if split is not None:
        refuse_without_environment(names, "dataset-bc runs without one here (scoring held-out demonstrations)")
    elif not specs or any(spec is None for spec in specs.values()):
        refuse_without_environment(names, "the data records no environment for "
                                   + ", ".join(str(g) for g, spec in specs.items() if spec is None) if specs
                                   else "the data records no environment")


def learner_factory(policy: str, data: PreparedData, *, batch_size: int = 64, learning_rate: float = 1e-3,
                    device: Any = "cpu", options: tuple = ()) -> Any:
    """The :class:`~curteach_teaching.learners.dataset_learner.LearnerFactory` a trained score gets: fresh learners of
    ``--policy`` for the prepared data's spaces (the codec's observations), checked now (one line where the kind
    cannot learn them); ``options``: the kind's hyper-parameters away from their defaults."""
    from curteach_teaching.learners.dataset_learner import LearnerFactory

    return LearnerFactory(policy, data.codec.observation_space, data.action_space, batch_size=batch_size,
                          learning_rate=learning_rate, device=device, options=tuple(options)).check()


def prepare(pool: Any, read: Iterable[str], *, checked: Iterable[str] = (), policy: str | None = "auto",
            split: Any = None, task_one_hot: bool = False) -> PreparedData:
    """The prepared data of ``pool``.

    Args:
        pool: the :class:`~curteach_teaching.datasets.EpisodePool`, read once by the caller (``N`` episodes).
        read: the score names (or sums) whose values are kept; checked: further names checked but not kept (a flag
            is checked whether or not a cell reads it).
        policy: the learner's ``--policy`` kind: the data is encoded, digested and the kind checked on the codec's
            space; ``None``: nothing trains (every name read is plain), the pool's trajectories as they are.
        split: ``(train, held_out)`` pool indices (``dataset-bc``'s held-out split, computed by the caller), or
            ``None``: everything is computed on the training part; the held-out episodes are only encoded.
        task_one_hot: a task one-hot over the pool's groups (:mod:`~curteach_teaching.datasets.codecs.
            task_one_hot`), asked for.

    Raises:
        ValueError: one line (a bad score, a trained score on fewer than 2 episodes or without a learner, a space
            without a policy, a score that needs an environment on data without one, ...).
    """
    read = tuple(read)
    trained = trained_terms(read)
    check_environment(pool, (*read, *checked), split)
    if trained and policy is None:
        raise ValueError(f"task score {', '.join(trained)} is trained: prepare the data with a policy")
    digest = "" if policy is None else pool_digest(pool)  # of the whole pool, before any split
    held = None
    if split is not None:
        held, pool = pool.select(split.held_out), pool.select(split.train)  # the scores see the training part
    scores = {}
    for task in sorted({*read, *checked}):
        if not is_trained(task):
            values = task_difficulty(pool, task)
            if task in read:
                scores[task] = values
            continue
        for term in score_terms(task):  # a sum with a trained term: its other terms now, the sum after the fit
            if not is_trained(term):
                values = task_difficulty(pool, term)
                if task in read:
                    scores[term] = values
        if len(pool) < 2:
            raise ValueError(f"task score {task!r} is trained on the data: it needs at least 2 episodes")
    if policy is None:
        return PreparedData(trajectories=tuple(pool.trajectories), lengths=np.asarray(pool.lengths, dtype=np.float64),
                            groups=tuple(pool.groups), seeds=tuple(pool.seeds), env_specs=dict(pool.env_specs),
                            codec=None, action_space=pool.action_space, task_scores=scores,
                            metadata=tuple(pool.metadata))
    from curteach_teaching.datasets.codecs import codec_for
    from curteach_teaching.learners.dataset_learner import check_learner

    codec = codec_for(pool.observation_space, pool.env_specs, pool.groups, task_one_hot=task_one_hot)
    check_learner(policy, codec.observation_space, pool.action_space)  # builds no network
    trajectories = codec.trajectories(pool.trajectories, pool.groups)
    return PreparedData(
        trajectories=tuple(trajectories),
        lengths=np.asarray([len(t.acts) for t in trajectories], dtype=np.float64),
        groups=tuple(pool.groups), seeds=tuple(pool.seeds), env_specs=dict(pool.env_specs), codec=codec,
        action_space=pool.action_space, task_scores=scores, digest=digest,
        held_out=() if held is None else tuple(codec.trajectories(held.trajectories, held.groups)),
        held_out_groups=() if held is None else tuple(held.groups), split=split, metadata=tuple(pool.metadata))


def unfitted(data: PreparedData | None, tasks: Sequence[str]) -> list[str]:
    """The trained scores ``tasks`` read that ``data`` holds no values of yet."""
    done = {} if data is None else data.task_scores
    return [term for term in trained_terms(tasks) if term not in done]


def fit_scores(data: PreparedData, tasks: Sequence[str], scores: Mapping[str, Any], *,
               learner: Callable[[int], Any], device: Any = "cpu", seed: int = 0, cache: Any = None,
               label: str = "", progress: bool = False, say: Callable[[str], None] | None = None) -> PreparedData:
    """``data`` with every trained score ``tasks`` read fitted (once; those it holds already are kept) and the
    weighted sums among ``tasks`` combined.

    Args:
        data: :func:`prepare`'s; tasks: the names and sums read.
        scores: ``name -> trained score`` (:func:`~curteach_teaching.datasets.scores.registry.trained_score`, built
            by the caller from its settings, so that a bad option is refused before any data is read).
        learner: the learners' factory (:func:`learner_factory`); device: where to train; seed: the sweep's.
        cache: the cache folder (``None``: none); label: what else keys each cached file (the caller's).
        progress: bars; say: gets each score's lines (what it fits, a damaged cache, how it ended).

    Raises:
        ValueError: a trained score not in ``scores``, or values that are not one finite number per episode.
    """
    for name in unfitted(data, tasks):
        if name not in scores:
            raise ValueError(f"trained score {name!r} was not built (give it in scores)")
        values = np.asarray(scores[name].fit(data, learner, device=device, seed=seed, cache=cache, label=label,
                                             progress=progress, say=say), dtype=np.float64)
        if values.shape != (len(data),) or not np.isfinite(values).all():
            raise ValueError(f"trained score {name!r} must give one finite number per episode, shape ({len(data)},); "
                             f"got shape {values.shape}" + ("" if values.shape != (len(data),) else " with non-finite "
                                                            "values"))
        data = data.with_scores({name: values})
    return data.with_scores(data.sums(tasks))
