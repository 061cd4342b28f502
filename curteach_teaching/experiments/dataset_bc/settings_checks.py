"""The checks of a ``dataset-bc`` sweep's settings
(:class:`~curteach_teaching.experiments.dataset_bc.experiment.DatasetBCExperiment`'s): each bad value is a one-line
``ValueError`` naming the setting. Kept apart from the experiment's module, which had reached the size limit with
each new setting; duck-typed over the experiment, which imports this module.
"""

from __future__ import annotations

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.scaled import LEARNER_TERMS, SCALES
from curteach_teaching.curriculum.uses import Select, Weight

__all__ = ["BUDGETS", "check_settings"]

#: ``"equal"``: the same optimizer steps in every epoch of every curriculum; ``"per-epoch"``: one pass per epoch
BUDGETS = ("equal", "per-epoch")


def _finite_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def check_settings(experiment) -> None:
    """Check the settings of ``experiment`` (a ``DatasetBCExperiment`` being built) that do not name cells, and make
    its ``obs_keys`` a tuple; ``ValueError`` (one line, naming the setting) for the first bad one. The cells are the
    experiment's own to check (they are resolved by its methods); the checks against the data are its
    ``prepare``'s.
    """
    Select(experiment.keep)  # the range checks of keep and temperature, in one place
    if experiment.keep_within not in ("pool", "group"):
        raise ValueError(f"keep_within must be 'pool' or 'group'; got {experiment.keep_within!r}")
    Weight(experiment.temperature)
    check_int("ensemble_size", experiment.ensemble_size, 2)
    if experiment.ensemble_batches is not None:
        check_int("ensemble_batches", experiment.ensemble_batches, 1)
    check_int("teacher_seed", experiment.teacher_seed, 0)
    from curteach_teaching.datasets.scores.registry import trained_names, trained_score

    options = experiment.score_options()
    for name in trained_names():  # every built-in trained score checks its own options (a flag no cell reads too)
        trained_score(name, options)
    if experiment.holdout is not None:
        h = experiment.holdout
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0 < h < 1:
            raise ValueError(f"holdout must be a fraction in (0, 1) (the share of episodes held out); got {h!r}")
    field = experiment.holdout_field
    if field is not None and (experiment.holdout is None or not isinstance(field, str) or not field):
        raise ValueError("holdout_field must name a boolean metadata field, and goes with holdout (no "
                         f"environment); got {experiment.holdout_field!r}")
    if experiment.obs_keys is not None:
        keys = tuple(experiment.obs_keys) if not isinstance(experiment.obs_keys, str) else ()
        if not keys or not all(isinstance(k, str) and k for k in keys):
            raise ValueError(f"obs_keys must be observation key names; got {experiment.obs_keys!r}")
        object.__setattr__(experiment, "obs_keys", keys)
    if experiment.device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda' (resolve 'auto' first); got {experiment.device!r}")
    if experiment.learner_term not in LEARNER_TERMS:
        raise ValueError(f"learner_term must be one of {LEARNER_TERMS}; got {experiment.learner_term!r}")
    if experiment.scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}; got {experiment.scale!r}")
    if experiment.budget not in BUDGETS:
        raise ValueError(f"budget must be one of {BUDGETS}; got {experiment.budget!r}")
    for name in ("max_batches", "batch_size", "eval_every", "eval_episodes"):
        check_int(name, getattr(experiment, name), 1)
    if experiment.epochs is not None:
        check_int("epochs", experiment.epochs, 1)
    _finite_positive("learning_rate", experiment.learning_rate)
    _finite_positive("pacing_a", experiment.pacing_a)
    b = experiment.pacing_b
    if isinstance(b, bool) or not isinstance(b, (int, float)) or not 0 <= b <= 1:
        raise ValueError(f"pacing_b must be in [0, 1]; got {experiment.pacing_b!r}")
