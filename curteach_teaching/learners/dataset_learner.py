"""The learner ``dataset-bc`` trains on a dataset: its protocol and its registry.

A *dataset learner* is one policy with its own way of learning from demonstrated steps. ``dataset-bc`` asks it for
three things and nothing else (the curricula, the held-out scoring and the evaluator never look inside it):

* **a train step** a curriculum feeds: :meth:`DatasetLearner.train_step` takes one batch of demonstrated steps, with
  a loss weight per step (``None``: all equal), takes one optimizer step and returns the batch's loss;
* **a per-step log-likelihood** (:meth:`DatasetLearner.log_likelihood`): ``log pi(a_t | s_t)`` of given steps, or
  another per-step score where larger means better fitted (minus a denoising loss, say). Cur's learner term sums it
  per demonstration, held-out scoring reports minus its mean as ``nll``, and an ensemble member is a learner built
  with its own seed, trained on a subset and asked this of the other demonstrations;
* **acting** (:meth:`DatasetLearner.act`): one action per observation of a batch, greedy, or sampled with row ``b``
  drawing from ``streams[b]`` only (one seeded NumPy generator per episode, so an episode's actions never depend on
  which other episodes share the batch).

A learner that reads the steps before each step (a recurrent policy) declares ``window: int`` (``W``; 1 when absent):
then every observation it is handed, to train, to score and to act, is a window ``(W, *obs_shape)`` of the ``W``
observations ending at the step, padded before its episode's start with the episode's first observation
(:mod:`~curteach_teaching.learners.windows`; the evaluator keeps one window per environment, restarted at each
episode's start), and every action the window's last step's.

A learner is built by a *learner kind*, the object the registry :data:`DATASET_LEARNERS` hands back for a name of
``--policy``: ``kind.check(observation_space, action_space)`` raises a one-line ``ValueError`` when the kind cannot
learn these spaces (called before any training), and ``kind(observation_space, action_space, seed=..., device=...,
batch_size=..., learning_rate=..., rng=...)`` builds a fresh learner whose weights come from ``seed`` alone. A class
with a ``check`` classmethod is a learner kind.

The built-in names are the SB3 policies imitation's ``BC`` trains
(:data:`~curteach_teaching.learners.policy_kinds.POLICY_KINDS`: :mod:`~curteach_teaching.learners.bc_learner`).
``module:attr`` names a user's learner kind, or, as before, a factory
``(observation_space, action_space, seed) -> SB3 policy`` that BC trains (an object without ``check``). A
third-party package declares its learner kinds in the entry-point group ``curteach.dataset_learners``.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from curteach_teaching.learners.policy_kinds import POLICY_KINDS
from curteach_teaching.registry import PluginError, Registry

__all__ = ["DATASET_LEARNERS", "DatasetLearner", "LearnerFactory", "check_learner", "learner_kind", "make_learner"]


@runtime_checkable
class DatasetLearner(Protocol):
    """What ``dataset-bc`` asks of a learner (see the module docstring).

    ``T`` steps of observations are an array ``(T, *observation_space.shape)`` (a dict of such arrays for a ``Dict``
    space), as the experiment's observation codec gives them; actions ``(T, *action_space.shape)`` (``(T,)`` for
    ``Discrete``), as demonstrated (continuous actions never clipped).

    Attributes:
        observation_space, action_space: the spaces the learner was built for.
        window: optional, ``W`` >= 1 (absent: 1): observations come as windows ``(B, W, *obs_shape)`` (see the
            module docstring).
    """

    observation_space: Any
    action_space: Any

    def train_step(self, obs: Any, acts: Any, weights: Any | None) -> Any:
        """One optimizer step on a batch of ``B`` steps.

        Args:
            obs: ``(B, ...)`` observations; acts: ``(B, ...)`` actions (NumPy).
            weights: ``(B,)`` float64 loss weights (a weighted mean), or ``None`` for the plain mean.

        Returns:
            the batch's loss: a float, or a 0-d torch tensor left on the training device (read only when a watcher
            asks; a non-finite loss stops a run as diverged).
        """

    def log_likelihood(self, obs: Any, acts: Any) -> Any:
        """``(T,)`` float64 per-step ``log pi(a_t | s_t)`` (larger = better fitted; a log-density can be positive),
        without gradients, the learner's training state unchanged; NaN for every step once the learner diverged."""

    def diverged(self) -> bool:
        """Whether the learner's parameters are no longer finite (its scores are then NaN; read once per
        evaluation, never per step)."""

    def act(self, obs: Any, streams: Sequence[Any] | None = None) -> Any:
        """``(B, ...)`` one action per observation: greedy (``streams=None``), else row ``b`` sampled from
        ``streams[b]`` (a ``numpy.random.Generator``) only. ``Discrete``: ``(B,)`` int64; ``Box``: ``(B, D)``
        float64, unclipped (the evaluator clips to the space when acting).

        Raises:
            LearnerDiverged: the learner's outputs are no longer numbers it can act on.
        """


DATASET_LEARNERS = Registry("dataset learner", "curteach.dataset_learners")


def _bc_kind(kind: str) -> Any:
    from curteach_teaching.learners.bc_learner import BCLearnerKind

    return BCLearnerKind(kind)


for _name in POLICY_KINDS:
    DATASET_LEARNERS.add(_name, lambda name=_name: _bc_kind(name))


def _diffusion_kind() -> Any:
    from curteach_teaching.learners.diffusion import DiffusionLearner  # diffusers' schedulers: imported on use

    return DiffusionLearner


DATASET_LEARNERS.add("diffusion", _diffusion_kind)


def _bc_rnn_kind() -> Any:
    from curteach_teaching.learners.bc_rnn import BCRNNLearner

    return BCRNNLearner


DATASET_LEARNERS.add("bc-rnn", _bc_rnn_kind)


def learner_kind(policy: str) -> tuple[str, Any]:
    """``(name, kind)``: the learner kind ``--policy`` names (a registered name, an entry point or ``module:attr``);
    a ``module:attr`` without ``check`` is an SB3 policy factory, trained by BC.

    Raises:
        ValueError: an unknown name, or a ``module:attr`` that does not load.
    """
    name, found = DATASET_LEARNERS.load(policy)
    if ":" in policy and not callable(getattr(found, "check", None)):
        return name, _bc_kind(policy)  # an SB3 policy factory: make_policy loads it again, as before
    return name, found


def check_learner(policy: str, observation_space: Any, action_space: Any) -> None:
    """Raise a one-line ``ValueError`` when ``policy`` names no learner kind or one that cannot learn these spaces.
    Builds no network (an SB3 policy factory given as ``module:attr`` is called once, with seed 0, as before)."""
    name, kind = learner_kind(policy)
    try:
        kind.check(observation_space, action_space)
    except ValueError:
        raise  # the protocol's refusal, in the kind's own words
    except Exception as error:  # anything else is a broken plug-in: named, its traceback kept for the log
        raise PluginError(f"dataset learner {name!r}: check raised {type(error).__name__}: {error}",
                          traceback.format_exc()) from error


def make_learner(policy: str, observation_space: Any, action_space: Any, *, seed: int, device: Any,
                 batch_size: int, learning_rate: float, rng: Any, options: Any = ()) -> DatasetLearner:
    """A fresh learner of the kind ``policy`` names, its weights from ``seed`` alone, on ``device``.

    Args:
        policy: a name of :data:`DATASET_LEARNERS` or ``module:attr`` (see the module docstring).
        observation_space, action_space: the spaces it learns.
        seed: the weights' seed; device: where it trains ("cpu", "cuda", a ``torch.device``).
        batch_size: steps per optimizer step; learning_rate: the optimizer's rate.
        rng: a ``numpy.random.Generator`` the learner may draw its own randomness from (BC: its batch order, unused
            under a curriculum).
        options: the kind's hyper-parameters away from their defaults
            (:func:`~curteach_teaching.learners.hyperparameters.learner_options`; ``()``: none, the kind called as
            before).

    Raises:
        ValueError: an unknown name; a kind that cannot learn these spaces; a plug-in that raises or returns
            something without ``train_step``, ``log_likelihood`` and ``act``.
    """
    from curteach_teaching.learners.hyperparameters import learner_keywords

    name, kind = learner_kind(policy)
    return DATASET_LEARNERS.call(name, kind, observation_space, action_space, seed=seed, device=device,
                                 batch_size=batch_size, learning_rate=learning_rate, rng=rng,
                                 **learner_keywords(options),
                                 expect=lambda learner: isinstance(learner, DatasetLearner))


@dataclass(frozen=True)
class LearnerFactory:
    """Fresh learners of one kind for one data's spaces: what a trained score
    (:mod:`~curteach_teaching.datasets.scores.trained`) gets to train its own learners, so that a score trains the
    kind the command's ``--policy`` names (BC's SB3 policies, ``diffusion``, a plug-in) without knowing it.

    Args:
        policy: a name of :data:`DATASET_LEARNERS` or ``module:attr``; observation_space, action_space: the spaces.
        batch_size, learning_rate: the learners' defaults; device: where they train.
        options: the kind's hyper-parameters away from their defaults (sorted ``(name, value)`` pairs,
            :func:`~curteach_teaching.learners.hyperparameters.learner_options`).
    """

    policy: str
    observation_space: Any
    action_space: Any
    batch_size: int = 64
    learning_rate: float = 1e-3
    device: Any = "cpu"
    options: tuple = ()

    def check(self) -> LearnerFactory:
        """This factory, once the kind is checked on its spaces (one-line ``ValueError`` where it cannot learn
        them; builds no network)."""
        check_learner(self.policy, self.observation_space, self.action_space)
        return self

    def __call__(self, seed: int, *, rng: Any = None, batch_size: int | None = None,
                 learning_rate: float | None = None) -> DatasetLearner:
        """A fresh learner whose weights come from ``seed`` alone (:func:`make_learner`); ``rng``: its own generator
        (default: one seeded by ``seed``); ``batch_size``, ``learning_rate``: other than the factory's."""
        import numpy as np

        return make_learner(self.policy, self.observation_space, self.action_space, seed=seed, device=self.device,
                            batch_size=self.batch_size if batch_size is None else batch_size,
                            learning_rate=self.learning_rate if learning_rate is None else learning_rate,
                            rng=np.random.default_rng(seed) if rng is None else rng, options=self.options)
