"""The one score registry, plain and trained: the task difficulty of every demonstration, larger = harder (dropped
first by a selection), and the one place that decides what a name means.

A task score says how hard a demonstration's task is before any learner sees it (the teacher's ``log Psi^E`` of the
paper's learner-centric curricula, Section 6). :data:`TASK_SCORES` is a
:class:`~curteach_teaching.registry.Registry` of them; a name given to :func:`task_difficulty` is, in this order:

1. ``module:attr``: a user's function ``f(pool) -> (N,)`` (or a :class:`TaskScore`), imported on the spot;
2. a built-in: ``length`` (actions), ``return`` (minus the undiscounted return: a better demonstration is an easier
   one, as curation ranks them), ``level`` (the dataset's rank on the ladder, 1-based, in the pool's order) and
   ``ensemble`` (trained: BC policies on bootstrap halves of the data; see below), and the trained scores that need
   no environment besides it: ``deminf``, ``policy-loss``, ``action-likelihood``, ``action-variance``, and
   ``demo-score``, which needs one (a score declaring ``needs_env`` is refused on data without one:
   :func:`refuse_without_environment`);
3. an entry point of the group ``curteach.task_scores``;
4. a per-episode field: a number in every episode's metadata (custom keys stored with the dataset, Minari's
   ``total_steps``), else a number at the last step of every episode's infos (a ``success`` flag; a LeRobot
   dataset's ``next.success`` is read as ``success``);
5. ``not:FIELD``: 1 where a 0/1 (or True/False) field is 0, else 0 (``not:success``: a failed demonstration is
   the harder one, as ``--bad-field not:success`` marks it bad);

and several of them weighted and summed, each standardised over the pool: ``ensemble+100*not:success``, the ensemble's
ranking with every failed demonstration last (:mod:`~curteach_teaching.datasets.scores.sums`).

A **trained** score (:mod:`~curteach_teaching.datasets.scores.trained`'s protocol: ``settings()`` and ``fit``;
the ensemble, :class:`~curteach_teaching.datasets.scores.ensemble.EnsembleScore`, is the first) is not a function
of the pool alone: it is fitted once, by the prepare step ``rank`` and ``dataset-bc`` both call
(:mod:`~curteach_teaching.datasets.prepare`), and its values are handed to :func:`task_difficulty` as
``trained={name: values}``; asked for without them, it is a one-line error. :func:`is_trained` and
:func:`trained_score` are all a command or an experiment asks of it; none names one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from curteach_teaching.datasets.pool import EpisodePool
from curteach_teaching.datasets.scores.sums import combine, parse_sum
from curteach_teaching.datasets.scores.trained import build_trained, is_trained_object
from curteach_teaching.registry import Registry

__all__ = ["NEGATION", "TASK_SCORES", "TaskScore", "describe_task_scores", "is_trained", "last_step_flags",
           "level_order", "score_names", "score_terms", "task_difficulty", "trained_names", "trained_options",
           "trained_score", "trained_terms"]

#: the prefix of a 0/1 field's negation (``not:success``: 1 for a failed demonstration)
NEGATION = "not:"

#: Task scores by name, plain and trained (built-ins below; ``module:attr`` and entry points of
#: ``curteach.task_scores`` too).
TASK_SCORES = Registry("task score", "curteach.task_scores")


@dataclass(frozen=True)
class TaskScore:
    """A named plain task score.

    Attributes:
        name: how it is shown.
        summary: one line for help texts.
        compute: ``pool -> (N,)`` difficulties (larger = harder).
    """

    name: str
    summary: str
    compute: Callable[[EpisodePool], np.ndarray]


def _length(pool: EpisodePool) -> np.ndarray:
    return pool.lengths


def _minus_return(pool: EpisodePool) -> np.ndarray:
    if not pool.has_rewards:
        raise ValueError("task score 'return' needs rewards; this pool has none")
    return -pool.returns


def level_order(pool: EpisodePool) -> str:
    """One line naming each group's ``level`` (its rank in the pool's order), for a command to print: the order is
    the order the datasets were read in, which for a folder of datasets is their names' order, not a ladder's."""
    ranked = ", ".join(f"{i + 1} {group}" for i, group in enumerate(dict.fromkeys(pool.groups)))
    return (f"task score level: {ranked} (the datasets' order as read; a folder's datasets are read in name order: "
            "list them with commas for another)")


def _level(pool: EpisodePool) -> np.ndarray:
    order = list(dict.fromkeys(pool.groups))  # the datasets in the order given: the ladder
    if len(order) < 2:
        raise ValueError("task score 'level' ranks the datasets of a ladder: give at least two")
    rank = {group: i + 1 for i, group in enumerate(order)}
    return np.asarray([rank[g] for g in pool.groups], dtype=np.float64)


# ---- built-ins: the only list of them (dataset-bc's help, its checks and its runs read it from here) ----
TASK_SCORES.register("length")(TaskScore("length", "actions per episode", _length))
TASK_SCORES.register("return")(TaskScore("return", "minus the episode's return (a better demonstration is easier)",
                                         _minus_return))
TASK_SCORES.register("level")(TaskScore("level", "the dataset's rank in the list, 1-based (a ladder)", _level))


def _ensemble():
    from curteach_teaching.datasets.scores.ensemble import EnsembleScore

    return EnsembleScore


TASK_SCORES.add("ensemble", _ensemble)  # the trained built-ins: loaded on first use (they import torch)


def _deminf():
    from curteach_teaching.datasets.scores.deminf import DemInfScore

    return DemInfScore


def _policy_loss():
    from curteach_teaching.datasets.scores.policy_loss import PolicyLossScore

    return PolicyLossScore


def _action_likelihood():
    from curteach_teaching.datasets.scores.action_likelihood import ActionLikelihoodScore

    return ActionLikelihoodScore


def _action_variance():
    from curteach_teaching.datasets.scores.action_variance import ActionVarianceScore

    return ActionVarianceScore


# the field's scores that need no environment (issue 53): DemInf, and CUPID's baselines on one policy trained on all
TASK_SCORES.add("deminf", _deminf)
TASK_SCORES.add("policy-loss", _policy_loss)
TASK_SCORES.add("action-likelihood", _action_likelihood)
TASK_SCORES.add("action-variance", _action_variance)


def _demo_score():
    from curteach_teaching.datasets.scores.demo_score import DemoScore

    return DemoScore


def _cupid():
    from curteach_teaching.datasets.scores.cupid import CupidScore

    return CupidScore


# the field's scores that need an environment (issue 53): Demo-SCORE's success classifier, CUPID's influence
TASK_SCORES.add("demo-score", _demo_score)
TASK_SCORES.add("cupid", _cupid)


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def _info_value(info, key: str):
    """An info's value at the episode's last step (the first axis is time), or ``None`` when it is not a number."""
    if key not in info or isinstance(info[key], dict):
        return None
    array = np.asarray(info[key])
    value = array[-1] if array.ndim == 1 and array.size else None
    return value if value is not None and _is_number(value.item() if hasattr(value, "item") else value) else None


def last_step_flags(metadata: Sequence[dict], infos: Sequence[dict], name: str) -> np.ndarray | None:
    """``(N,)`` bool: the step info ``name`` at each episode's last step, where no episode's ``metadata`` holds
    ``name`` (a metadata field comes first, as :func:`task_difficulty` reads fields) and every episode's ``infos``
    hold it as a flag (``success`` as Gymnasium-Robotics' and Meta-World's datasets record it per step: bools, or
    numbers 0 and 1); ``None`` otherwise (the field is then the metadata's, or absent).

    Raises:
        ValueError: a last value that is not 0, 1, True or False, naming the episode.
    """
    if any(name in meta for meta in metadata) or not len(infos) or not all(name in info for info in infos):
        return None
    flags = []
    for i, info in enumerate(infos):
        value = _info_value(info, name)
        value = value.item() if hasattr(value, "item") else value
        if value is None or float(value) not in (0.0, 1.0):
            raise ValueError(f"step info {name!r} of episode {i} of the pool is {value!r} at its last step; a flag "
                             "is 0 or 1 (True or False)")
        flags.append(bool(value))
    return np.asarray(flags, dtype=bool)


def _fields(pool: EpisodePool) -> list:
    """Every per-episode metadata key with a number in every episode, then every info key with a number at every
    episode's last step."""
    names: list = []
    if len(pool):
        common = set.intersection(*(set(k for k, v in m.items() if _is_number(v)) for m in pool.metadata))
        common -= {"id", "seed"}  # Minari's bookkeeping, not a property of the task
        names += sorted(common)
        infos = set.intersection(*(set(k for k in info if _info_value(info, k) is not None) for info in pool.infos))
        names += sorted(infos - set(names))
    return names


def score_names(pool: EpisodePool) -> tuple:
    """The names :func:`task_difficulty` accepts for ``pool``: the registry's (built-ins, then entry points), then
    the pool's fields that no registered name shadows."""
    registered = TASK_SCORES.names()
    return (*registered, *(name for name in _fields(pool) if name not in registered))


def describe_task_scores() -> str:
    """``name (summary), ...`` of the registered scores, for help texts."""
    described = []
    for name in TASK_SCORES.names():
        obj = TASK_SCORES.load(name)[1] if TASK_SCORES.is_builtin(name) else None
        summary = getattr(obj, "summary", None)
        described.append(f"{name} ({summary})" if isinstance(summary, str) else name)
    return ", ".join(described)


def _field(pool: EpisodePool, name: str) -> np.ndarray | None:
    """The field ``name`` of every episode, or ``None`` when no episode has it."""
    in_metadata = [name in m for m in pool.metadata]
    if any(in_metadata):
        values = []
        for i, meta in enumerate(pool.metadata):
            if name not in meta or not _is_number(meta[name]):
                raise ValueError(f"task score field {name!r} is missing or not a number in the metadata of episode "
                                 f"{int(pool.episode_ids[i])} of {pool.groups[i]!r}: got {meta.get(name)!r}")
            values.append(float(meta[name]))
        return np.array(values, dtype=np.float64)
    if len(pool) and all(name in info for info in pool.infos):
        values = []
        for i, info in enumerate(pool.infos):
            value = _info_value(info, name)
            if value is None:
                raise ValueError(f"info {name!r} of episode {int(pool.episode_ids[i])} of {pool.groups[i]!r} has no "
                                 "number at the last step")
            values.append(float(value))
        return np.array(values, dtype=np.float64)
    return None


def _renamed(pool: EpisodePool, name: str) -> str:
    """A format's spelling of a field (LeRobot's column ``next.X`` is the field ``X``): the hint of
    :func:`~curteach_teaching.datasets.formats.field_hint` when ``name`` is such a spelling, else ``""``."""
    from curteach_teaching.datasets.formats import field_hint

    return field_hint(name, _fields(pool))


def _negated(pool: EpisodePool, spec: str) -> np.ndarray:
    """``not:FIELD``: ``(N,)`` 1.0 where the 0/1 field is 0, else 0.0."""
    name = spec[len(NEGATION):].strip()
    if not name:
        raise ValueError(f"task score {spec!r} names no field after {NEGATION!r} (e.g. not:success)")
    values = _field(pool, name)
    if values is None:
        raise ValueError(f"task score {spec!r}: no episode has a field {name!r}{_renamed(pool, name)}; fields: "
                         f"{', '.join(_fields(pool)) or 'none'}")
    flags = (values == 0.0) | (values == 1.0)
    if not flags.all():
        i = int(np.flatnonzero(~flags)[0])
        raise ValueError(f"task score {spec!r} needs a 0/1 (True/False) field; {name!r} is {values[i]:g} for episode "
                         f"{int(pool.episode_ids[i])} of {pool.groups[i]!r}")
    return 1.0 - values


def score_terms(spec: str) -> tuple[str, ...]:
    """The names ``spec`` reads: its terms' for a sum (``ensemble+100*not:success`` -> ``("ensemble",
    "not:success")``), else ``(spec,)``.

    Raises:
        ValueError: a sum that does not parse (:func:`~curteach_teaching.datasets.scores.sums.parse_sum`).
    """
    terms = parse_sum(spec.strip())
    return (spec.strip(),) if terms is None else tuple(term.name for term in terms)


def _registered(spec: str):
    """``(name, object)`` of a ``module:attr``, built-in or entry-point score, else ``None`` (a field, ``not:FIELD``
    or nothing)."""
    if spec.startswith(NEGATION):
        return None
    if ":" in spec or spec in TASK_SCORES.names():
        return TASK_SCORES.load(spec)
    return None


def is_trained(spec) -> bool:
    """Whether ``spec`` (a name or a sum of names, or a registered object) is or reads a trained score (its values
    come from the prepare step's fit)."""
    if not isinstance(spec, str):
        return is_trained_object(spec)
    if not spec.strip():
        return False
    terms = parse_sum(spec.strip())
    if terms is not None:
        return any(is_trained(term.name) for term in terms)
    found = _registered(spec.strip())
    return found is not None and is_trained_object(found[1])


def trained_terms(specs) -> tuple[str, ...]:
    """The trained scores that the names or sums ``specs`` read, each once, in order."""
    return tuple(dict.fromkeys(term for spec in specs for term in score_terms(spec) if is_trained(term)))


def trained_score(name: str, options: Mapping):
    """The trained score ``name`` (a registered name or ``module:attr``) built from ``options``, the caller's
    settings by name (:func:`~curteach_teaching.datasets.scores.trained.build_trained`).

    Raises:
        ValueError: ``name`` is not a trained score, or its options are out of range (one line).
    """
    found = _registered(name.strip())
    if found is None or not is_trained_object(found[1]):
        raise ValueError(f"task score {name!r} is not a trained score")
    return build_trained(found[1], options)


def trained_names() -> tuple[str, ...]:
    """The built-in trained scores' names, in registration order."""
    return tuple(name for name in TASK_SCORES.names()
                 if TASK_SCORES.is_builtin(name) and is_trained_object(TASK_SCORES.load(name)[1]))


def needs_environment(spec: str) -> bool:
    """Whether ``spec`` (a name or a sum of names) reads a score that declares ``needs_env`` (it rolls a policy out
    in the data's environments: ``demo-score``)."""
    found = [_registered(term) for term in score_terms(spec)] if spec.strip() else []
    return any(f is not None and bool(getattr(f[1], "needs_env", False)) for f in found)


def environment_free_names() -> tuple[str, ...]:
    """The built-in scores that need no environment, in registration order."""
    return tuple(name for name in TASK_SCORES.names()
                 if TASK_SCORES.is_builtin(name) and not getattr(TASK_SCORES.load(name)[1], "needs_env", False))


def refuse_without_environment(specs, where: str) -> None:
    """Refuse, in one line, the scores among ``specs`` that need an environment, on data that has none (``where``
    says why: no env spec, a held-out split).

    Raises:
        ValueError: naming those scores and the built-in ones that need none.
    """
    wanting = [spec for spec in dict.fromkeys(specs) if needs_environment(spec)]
    if wanting:
        raise ValueError(f"task score {', '.join(wanting)} rolls policies out in the data's environment, and "
                         f"{where}; the scores that need none: {', '.join(environment_free_names())}")


def trained_options() -> tuple:
    """The :class:`~curteach_teaching.datasets.scores.trained.ScoreOption` s of the built-in trained scores, each
    name once: the flags both commands offer."""
    found: dict = {}
    for name in TASK_SCORES.names():
        if not TASK_SCORES.is_builtin(name):  # a plug-in's options are read from the settings by name, unflagged
            continue
        obj = TASK_SCORES.load(name)[1]
        if is_trained_object(obj):
            for option in getattr(obj, "options", ()):
                found.setdefault(option.name, option)
    return tuple(found.values())


def task_difficulty(pool: EpisodePool, spec: str | Callable[[EpisodePool], np.ndarray] | TaskScore, *,
                    trained: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """One finite task difficulty per demonstration of ``pool``, larger = harder.

    Args:
        pool: ``N`` episodes.
        spec: a name (see the module docstring: ``module:attr``, a built-in, an entry point, a field, ``not:FIELD``)
            or a weighted sum of names (``ensemble+100*not:success``), a :class:`TaskScore`, or a function called as
            ``f(pool)`` returning ``N`` numbers.
        trained: the values of trained scores, ``name -> (N,)`` (the prepare step fits them).

    Returns:
        ``(N,)`` float64, in the pool's order.

    Raises:
        ValueError (one line): an unknown name (listing the available ones), a function that cannot be loaded,
            returns the wrong shape or values that are NaN or infinite (naming the episode), a trained score
            without its values. :class:`~curteach_teaching.registry.PluginError` (a ``ValueError``): a user's
            function raised.
    """
    if isinstance(spec, str):
        if not spec.strip():
            raise ValueError("a task score must be named; got an empty string")
        spec = spec.strip()
        terms = parse_sum(spec)
        if terms is not None:
            values = {term.name: task_difficulty(pool, term.name, trained=trained) for term in terms}
            return _checked(pool, spec, combine(terms, values))
        if spec.startswith(NEGATION):
            return _checked(pool, spec, _negated(pool, spec))
        found = _registered(spec)
        if found is None:
            values = _field(pool, spec)
            if values is None:
                import difflib

                names = score_names(pool)
                close = difflib.get_close_matches(spec, names, n=1, cutoff=0.75)
                hint = _renamed(pool, spec) or (f" (did you mean {close[0]!r}?)" if close else "")
                raise ValueError(f"no task score {spec!r}{hint}; available: {', '.join(names)} (or not:FIELD, a "
                                 "weighted sum such as length+2*return, or module:attr for your own function)")
            return _checked(pool, spec, values)
        name, score = found
    elif callable(spec) or isinstance(spec, TaskScore):
        name, score = getattr(spec, "name", None) or getattr(spec, "__name__", "callable"), spec
    else:
        raise ValueError(f"a task score is a name, a TaskScore or a function of the pool; got {spec!r}")
    if is_trained_object(score):
        if trained is None or name not in trained:
            raise ValueError(f"task score {name!r} is trained: its values come from the prepare step's fit "
                             "(rank and dataset-bc fit it before scoring)")
        return _checked(pool, name, trained[name])
    if isinstance(score, TaskScore) and TASK_SCORES.is_builtin(name):
        return _checked(pool, name, score.compute(pool))  # the library's own: its errors are already one line
    function = score.compute if isinstance(score, TaskScore) else score
    return _checked(pool, name, TASK_SCORES.call(name, function, pool))


def _checked(pool: EpisodePool, name: str, values) -> np.ndarray:
    try:
        scores = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"task score {name!r} must give numbers; got {type(values).__name__}") from None
    if scores.shape != (len(pool),):
        raise ValueError(f"task score {name!r} must give one number per episode, shape ({len(pool)},); got "
                         f"{scores.shape}")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"task score {name!r} is {scores[i]} for episode {int(pool.episode_ids[i])} of "
                         f"{pool.groups[i]!r} (position {i}); scores must be finite"
                         + (f" ({bad.size} episodes in all)" if bad.size > 1 else ""))
    return scores
