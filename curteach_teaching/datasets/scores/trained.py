"""The trained score's protocol: a score that must be fitted to the data before it gives one value per episode.

A plain score is a function of the pool (its length, its return, a field). A **trained** score fits something first
(BC policies, a classifier, a nearest-neighbour index), once, in the prepare step both ``rank`` and ``dataset-bc``
call (:func:`~curteach_teaching.datasets.prepare.fit_scores`), and is cached there. It is an object with two
methods, registered in :data:`~curteach_teaching.datasets.scores.registry.TASK_SCORES` like any score (or given as
``module:attr``):

* ``settings() -> dict``: what changes its values beyond the data, the learner and the seed (the keys enter the
  sweep's fingerprint of every cell that reads it, and should key its own cache);
* ``fit(data, learner, *, device, seed, cache, label, progress, say) -> (N,)``: one score per episode of the
  prepared data, larger = dropped first (harder). ``data`` is the
  :class:`~curteach_teaching.datasets.prepared.PreparedData` (encoded trajectories, actions, groups, lengths,
  metadata, the environments' specs where there are any); ``learner`` is ``seed -> policy``, a fresh network for the
  data's spaces (for now an SB3 policy of ``--policy``); ``device`` where to train; ``seed`` the sweep's;
  ``cache`` a folder (or ``None``) and ``label`` what else keys the cache there.

A registered class is built by its ``from_options(options)`` where it has one (the commands' flags and the
experiment's settings by name; :class:`TrainedScore`'s reads each of its :attr:`~TrainedScore.options`), else
called with no argument. :class:`TrainedScore` is a convenient base class; any object with both methods is a
trained score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

__all__ = ["ALWAYS_KEYED", "ScoreOption", "TrainedScore", "build_trained", "is_trained_object"]

#: :attr:`ScoreOption.unkeyed` of an option that every value keys
ALWAYS_KEYED = object()


@dataclass(frozen=True)
class ScoreOption:
    """A setting of a trained score, offered as a command-line flag ``--NAME`` (underscores as dashes) by both
    commands.

    Attributes:
        name: the setting's name (a flag, a field of the sweep's settings, a key of ``settings()``).
        type: ``int``, ``float`` or ``str``; default: its value when not given (``None``: the score decides);
        help: the flag's help text.
        unkeyed: the value at which :meth:`TrainedScore.settings` leaves the option out: what the score computed
            before the option existed, so that its caches and ``dataset-bc`` cells keep their keys and fingerprints
            (default: none; the option is always in the settings).
    """

    name: str
    type: type
    default: Any
    help: str
    unkeyed: Any = ALWAYS_KEYED


class TrainedScore:
    """A base class for trained scores: a score is built from its :attr:`options` (``from_options``), says them as
    its :meth:`settings` and fits in :meth:`fit`.

    Attributes:
        summary: one line for help texts.
        options: the :class:`ScoreOption` s it reads.
        needs_env: it rolls policies out in the data's environments (the commands refuse it, in one line, on data
            without one, before anything is fitted).
    """

    summary: ClassVar[str] = "a trained score"
    options: ClassVar[tuple] = ()
    needs_env: ClassVar[bool] = False

    def __init__(self, **values: Any):
        known = {option.name: option.default for option in self.options}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no option {', '.join(unknown)}; it has "
                             f"{', '.join(known) or 'none'}")
        self.values = {**known, **values}

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> TrainedScore:
        """The score with each of its :attr:`options` taken from ``options`` where there (else its default)."""
        return cls(**{option.name: options[option.name] for option in cls.options if option.name in options})

    def settings(self) -> dict:
        """``{option: value}`` of every option, in :attr:`options`' order, but those at their
        :attr:`ScoreOption.unkeyed` value."""
        unkeyed = {option.name: option.unkeyed for option in self.options}
        return {name: value for name, value in self.values.items()
                if unkeyed.get(name, ALWAYS_KEYED) is ALWAYS_KEYED or value != unkeyed[name]}

    def describe(self) -> dict:
        """What a report records of the score (default: :meth:`settings`)."""
        return self.settings()

    def fit(self, data: Any, learner: Callable[[int], Any], *, device: Any = "cpu", seed: int = 0,
            cache: Any = None, label: str = "", progress: bool = False,
            say: Callable[[str], None] | None = None) -> np.ndarray:
        """``(N,)`` one score per episode of ``data``, larger = harder (see the module docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must define fit()")


def is_trained_object(obj: Any) -> bool:
    """Whether ``obj`` (a registered object: a class or an instance) is a trained score: it has ``fit`` and
    ``settings``."""
    return callable(getattr(obj, "fit", None)) and callable(getattr(obj, "settings", None))


def build_trained(obj: Any, options: Mapping[str, Any]) -> Any:
    """The trained score ``obj`` names, built from ``options`` (a class: ``from_options(options)`` where it has
    one, else ``obj()``; an instance: itself)."""
    if not isinstance(obj, type):
        return obj
    from_options = getattr(obj, "from_options", None)
    return from_options(options) if callable(from_options) else obj()
