"""BC loss calculators: BC's own loss without autograd through its terms of weight 0 (:class:`BCLoss`), the original
navigation code's loss (:class:`StepMeanLoss`), a loss weighted per transition (:class:`WeightedLoss`, for
``use="weight"``) and a recorder of the training metrics of every optimizer step
(:class:`MetricsRecorder`).

Per batch of demonstrations ``j`` of lengths ``L_j``::

    Loss = sum_{l = 0}^{max_j L_j - 1}  mean_{j : L_j > l}  -log pi(a_{j,l} | s_{j,l})

(late steps, where few demonstrations are still active, weigh as much as early ones), where imitation's own loss is
the mean of ``-log pi(a | s)`` over the batch's state-action pairs.

Each computes only what its loss needs and someone reads (``read``: the metrics the curriculum's callbacks may read,
:func:`~curteach_teaching.curriculum.callbacks.metrics_read`): BC's metrics that are logged only
(:data:`LOGGED_ONLY`) are left out otherwise, and the loss, its gradient and every metric computed are the same
numbers either way (see :func:`_metrics`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from imitation.algorithms.bc import BCTrainingMetrics
from imitation.data import types
from imitation.util import util

from curteach_teaching.learners.actor_scores import actor_log_prob

__all__ = ["LOGGED_ONLY", "BCLoss", "MetricsRecorder", "StepMeanLoss", "WeightedLoss"]


def _as_tensors(obs: Any, acts: Any) -> tuple[Any, Any]:
    """BC's observations and actions as torch tensors, as BC's own loss calculator takes them."""
    import torch as th

    if isinstance(obs, th.Tensor) and isinstance(acts, th.Tensor):  # the step's batches: as they are
        return obs, acts
    return types.map_maybe_dict(util.safe_to_tensor, types.maybe_unwrap_dictobs(obs)), util.safe_to_tensor(acts)


#: BC's metrics that a step need not compute when no one reads them: ``prob_true_act`` always, the entropy and the
#: L2 norm (with their terms) when their weight is 0 (they are then logged only, not part of the loss), and BC's own
#: loss's ``neglogp`` when it is the whole loss (the loss is then ``neglogp + 0.0``)
LOGGED_ONLY = ("neglogp", "entropy", "ent_loss", "prob_true_act", "l2_norm", "l2_loss")


def _reads(read: frozenset | None, *names: str) -> bool:
    """Whether a metric of ``names`` is read (``read`` ``None``: every metric is)."""
    return read is None or any(name in read for name in names)


def _with_entropy(ent_weight: float, read: frozenset | None) -> bool:
    """Whether the step computes the entropy: in the loss, or read."""
    return ent_weight != 0 or _reads(read, "entropy", "ent_loss")


def _metrics(policy: Any, log_prob: Any, neglogp: Any, entropy: Any, ent_weight: float, l2_weight: float,
             read: frozenset | None = None, *, mean_log_prob: Any = None) -> BCTrainingMetrics:
    """BC's metrics around a ``neglogp`` and ``entropy`` computed another way than BC's plain means: the probability
    of the true actions from ``log_prob`` ``(B,)``, and BC's entropy and L2 terms with their weights. BC's own loss
    gives ``mean_log_prob`` (``log_prob.mean()``) and no ``neglogp``: ``neglogp = -mean_log_prob``, computed only
    where it is read or added to another term (a loss of ``neglogp`` alone is ``0.0 - mean_log_prob``, which is
    ``-mean_log_prob + 0.0`` to the bit, with the same gradient).

    The metrics no one reads (``read``: the names read, ``None``: all) and no gradient needs are left ``None``
    (:data:`LOGGED_ONLY`; the entropy is then not computed either): ``prob_true_act``, and the entropy and the L2
    norm with their terms at weight 0. The loss is BC's ``neglogp + ent_loss + l2_loss`` all the same, to the bit:
    a term of weight 0 is ``+-0`` (of a finite entropy or norm), which changes nothing but the sign of a zero loss,
    and the last term, ``0 * norm``, makes that ``+0``; so the loss adds ``0.0`` in place of an L2 term left out (its
    gradient is the same: an addition passes it through). Only an entropy or a norm that overflowed to infinity
    (``0 * inf`` is NaN) would make BC's loss NaN where, left out, it is the log-likelihood's."""
    import torch as th

    prob_true_act = None
    if _reads(read, "prob_true_act"):
        with th.no_grad():  # logged only
            prob_true_act = th.exp(log_prob).mean()
    l2_norm = None
    if l2_weight != 0:  # BC's expression, as it enters the loss
        l2_norm = sum(th.sum(th.square(w)) for w in policy.parameters()) / 2
    elif _reads(read, "l2_norm", "l2_loss"):
        with th.no_grad():  # logged only (BC logs it even at weight 0): one foreach norm, not 2 kernels per parameter
            l2_norm = th.nn.utils.get_total_norm(list(policy.parameters())).square() / 2
    ent_loss = None
    if _with_entropy(ent_weight, read):
        ent_loss = -ent_weight * (entropy if entropy is not None else th.zeros(1, device=log_prob.device))
    l2_loss = None if l2_norm is None else l2_weight * l2_norm
    if neglogp is None and ent_loss is None and l2_loss is None and not _reads(read, "neglogp"):
        return BCTrainingMetrics(neglogp=None, entropy=None, ent_loss=None, prob_true_act=prob_true_act, l2_norm=None,
                                 l2_loss=None, loss=0.0 - mean_log_prob)
    if neglogp is None:
        neglogp = -mean_log_prob
    loss = neglogp if ent_loss is None else neglogp + ent_loss
    return BCTrainingMetrics(
        neglogp=neglogp,
        entropy=entropy,
        ent_loss=ent_loss,
        prob_true_act=prob_true_act,
        l2_norm=l2_norm,
        l2_loss=l2_loss,
        loss=loss + (l2_loss if l2_loss is not None else 0.0),
    )


def _weighted_term(weight: float):
    """A block computing a term of the loss with this weight: with autograd only where the weight is not 0 (a term of
    weight 0 is still logged, but adds only zeros to the gradients)."""
    import torch as th

    return th.set_grad_enabled(th.is_grad_enabled() and weight != 0)


class BCLoss:
    """imitation's BC loss (``BehaviorCloningLossCalculator``: ``loss = -mean log pi(a | s) - ent_weight * mean
    entropy + l2_weight * ||theta||^2 / 2``), the same numbers, with autograd only where a gradient can be non-zero:
    a term of weight 0 (the entropy at ``ent_weight=0``, the L2 norm at ``l2_weight=0``) and the logged
    ``prob_true_act`` are computed without it. BC's own calculator backpropagates ``0 * term``, which adds zeros to
    the gradients: the losses, the steps and the parameters are the same (only the sign of a gradient that is
    exactly zero could differ, and SGD and Adam step the same on either). The logged ``l2_norm`` at ``l2_weight=0``
    is torch's foreach norm, equal to BC's sum of squares up to rounding (it is not part of the loss then). The
    log-probabilities come without a distribution object where the policy allows
    (:func:`~curteach_teaching.learners.actor_scores.actor_log_prob`: the same bits), and the metrics no one reads
    are not computed (``read``; see :func:`_metrics`).

    Args:
        ent_weight, l2_weight: as BC's.
        read: the names of the metrics someone reads (``None``: all of them); the others of :data:`LOGGED_ONLY`
            are left ``None`` where their weight is 0.
    """

    def __init__(self, ent_weight: float = 0.0, l2_weight: float = 0.0, *, read: frozenset | None = None):
        self.ent_weight = float(ent_weight)
        self.l2_weight = float(l2_weight)
        self.read = read

    @classmethod
    def of(cls, calculator: Any, read: frozenset | None = None) -> Any:
        """The :class:`BCLoss` of imitation's own calculator (exactly that class), computing the metrics ``read``;
        any other calculator, a user's, as it is."""
        from imitation.algorithms.bc import BehaviorCloningLossCalculator

        if type(calculator) is BehaviorCloningLossCalculator:
            return cls(calculator.ent_weight, calculator.l2_weight, read=read)
        return calculator

    def __call__(self, policy: Any, obs: Any, acts: Any) -> BCTrainingMetrics:
        """BC's loss-calculator interface: ``(policy, obs (B, ...), acts (B, ...)) -> BCTrainingMetrics``."""
        tensor_obs, acts = _as_tensors(obs, acts)
        log_prob, entropy = actor_log_prob(policy, tensor_obs, acts,
                                           entropy=_with_entropy(self.ent_weight, self.read))
        mean_log_prob = log_prob.mean()
        if entropy is not None:
            with _weighted_term(self.ent_weight):
                entropy = entropy.mean()
        return _metrics(policy, log_prob, None, entropy, self.ent_weight, self.l2_weight, self.read,
                        mean_log_prob=mean_log_prob)


class StepMeanLoss:
    """imitation BC ``loss_calculator`` of the original navigation code's loss, for one batch of transitions whose
    time steps (the position of each transition in its demonstration) are known::

        neglogp = sum_l mean_{t : steps[t] = l} -log pi(a_t | s_t)

    For a batch of whole demonstrations this is the sum over time steps of the mean cross-entropy over the
    demonstrations still active at that step. A time step without transitions adds nothing. The other terms are
    BC's: ``loss = neglogp - ent_weight * entropy + l2_weight * ||theta||^2 / 2``, with the entropy weighted as
    ``neglogp`` (``sum_l mean_{t : steps[t] = l} H(pi(. | s_t))``).

    Args:
        steps: ``(B,)`` int >= 0, the time step of each transition of the batch, in the batch's order.
        ent_weight, l2_weight: as BC's ``BehaviorCloningLossCalculator``.
        steps_tensor: ``(B,)`` int64, the same steps as a tensor on the training device (optional: saves a copy to
            the device per batch).
        read: the metrics someone reads, as :class:`BCLoss`'s.

    Attributes:
        calls: how many batches it has computed (:class:`~curteach_teaching.curriculum.adapters.bc.BCStepTrainer`
            installs one
            per batch and checks it is 1).
    """

    def __init__(self, steps: np.ndarray, *, ent_weight: float = 0.0, l2_weight: float = 0.0,
                 steps_tensor: Any = None, read: frozenset | None = None):
        steps = np.asarray(steps)
        if steps.ndim != 1 or steps.size == 0 or not np.issubdtype(steps.dtype, np.integer) or steps.min() < 0:
            raise ValueError(f"steps must be a non-empty 1-D array of integers >= 0; got {steps!r}")
        self.steps = steps.astype(np.int64)
        self.n_steps = int(self.steps.max()) + 1
        self.ent_weight = float(ent_weight)
        self.l2_weight = float(l2_weight)
        self.read = read
        self.calls = 0
        self._tensors: dict = {}
        if steps_tensor is not None:  # the same steps already on the training device: no copy per batch
            self._tensors[str(steps_tensor.device)] = steps_tensor, self._counts(steps_tensor)

    def _counts(self, steps: Any) -> Any:
        import torch as th

        # the transitions at each time step, >= 1; an index_add of ones, not bincount, which waits for a GPU
        counts = th.zeros(self.n_steps, dtype=th.int64, device=steps.device)
        return counts.index_add_(0, steps, th.ones_like(steps)).clamp(min=1)

    def _steps_and_counts(self, device: Any) -> tuple[Any, Any]:
        import torch as th

        key = str(device)
        if key not in self._tensors:
            steps = th.as_tensor(self.steps, device=device)
            self._tensors[key] = steps, self._counts(steps)
        return self._tensors[key]

    def _step_mean_sum(self, values: Any, device: Any) -> Any:
        import torch as th

        steps, counts = self._steps_and_counts(device)
        per_step = th.zeros(self.n_steps, dtype=values.dtype, device=values.device).index_add(0, steps, values)
        return (per_step / counts.to(values.dtype)).sum()

    def __call__(self, policy: Any, obs: Any, acts: Any) -> BCTrainingMetrics:
        """BC's loss-calculator interface: ``(policy, obs (B, ...), acts (B, ...)) -> BCTrainingMetrics``.

        Raises:
            ValueError: a batch of another length than ``steps``.
        """
        tensor_obs, acts = _as_tensors(obs, acts)
        if len(acts) != len(self.steps):
            raise ValueError(
                f"StepMeanLoss got a batch of {len(acts)} transitions for {len(self.steps)} time steps; a loss "
                "calculator made for one batch was used on another"
            )
        self.calls += 1
        log_prob, entropy = actor_log_prob(policy, tensor_obs, acts,
                                           entropy=_with_entropy(self.ent_weight, self.read))
        log_prob = log_prob.reshape(-1)
        neglogp = self._step_mean_sum(-log_prob, log_prob.device)
        if entropy is not None:
            with _weighted_term(self.ent_weight):
                entropy = self._step_mean_sum(entropy.reshape(-1), log_prob.device)
        return _metrics(policy, log_prob, neglogp, entropy, self.ent_weight, self.l2_weight, self.read)


class WeightedLoss:
    """imitation BC ``loss_calculator`` whose per-transition terms are weighted, for the minibatches of one ``train``
    call whose weights are known in advance::

        neglogp = mean_t w_t (-log pi(a_t | s_t)),   entropy = mean_t w_t H(pi(. | s_t))

    and BC's other terms as BC computes them (``loss = neglogp - ent_weight * entropy + l2_weight * ||theta||^2 /
    2``); with every ``w_t = 1`` it is BC's own loss. The weights of the pool average 1
    (:func:`~curteach_teaching.curriculum.uses.preference_weights`), so a batch's loss is an unbiased estimate of the
    weighted loss over the pool.

    Args:
        weights: one ``(b_k,)`` array per minibatch, in the order BC computes them (float32 arrays, or float32
            tensors already on the training device).
        ent_weight, l2_weight: as BC's ``BehaviorCloningLossCalculator``.
        read: the metrics someone reads, as :class:`BCLoss`'s.

    Attributes:
        calls: minibatches computed so far (the step trainer checks that every array was used once).
    """

    def __init__(self, weights: list, *, ent_weight: float = 0.0, l2_weight: float = 0.0,
                 read: frozenset | None = None):
        self.weights = [w if hasattr(w, "device") else np.asarray(w, dtype=np.float32) for w in weights]
        self.ent_weight = float(ent_weight)
        self.l2_weight = float(l2_weight)
        self.read = read
        self.calls = 0

    def __call__(self, policy: Any, obs: Any, acts: Any) -> BCTrainingMetrics:
        """BC's loss-calculator interface: ``(policy, obs (b, ...), acts (b, ...)) -> BCTrainingMetrics``.

        Raises:
            ValueError: more minibatches than weight arrays, or one of another length than its weights.
        """
        import torch as th

        if self.calls >= len(self.weights):
            raise ValueError(f"WeightedLoss holds weights for {len(self.weights)} minibatches; BC asked for more")
        tensor_obs, acts = _as_tensors(obs, acts)
        weights = self.weights[self.calls]
        if len(acts) != len(weights):
            raise ValueError(f"WeightedLoss got a minibatch of {len(acts)} transitions for {len(weights)} weights")
        self.calls += 1
        log_prob, entropy = actor_log_prob(policy, tensor_obs, acts,
                                           entropy=_with_entropy(self.ent_weight, self.read))
        log_prob = log_prob.reshape(-1)
        w = th.as_tensor(weights, device=log_prob.device, dtype=log_prob.dtype)
        neglogp = -(w * log_prob).mean()
        if entropy is not None:
            with _weighted_term(self.ent_weight):
                entropy = (w * entropy.reshape(-1)).mean()
        return _metrics(policy, log_prob, neglogp, entropy, self.ent_weight, self.l2_weight, self.read)


class MetricsRecorder:
    """Wraps a BC ``loss_calculator`` and keeps the training metrics of the optimizer step being taken.

    BC computes one ``BCTrainingMetrics`` per minibatch and steps on ``sum(loss * len(minibatch) / batch_size)``; the
    recorder accumulates every metric with the same weights, so :meth:`pop` after the step gives the metrics of the
    step's whole batch (``loss`` is the loss the step minimised), as tensors on the training device: reading them
    waits for the device (:mod:`~curteach_teaching.curriculum.step_metrics` reads them only when asked).

    Args:
        calculator: the calculator BC would have called (imitation's own or a :class:`StepMeanLoss`).
        batch_size: transitions in the step's batch (BC's ``batch_size`` during the step).
    """

    def __init__(self, calculator: Any, batch_size: int):
        self.calculator = calculator
        self.batch_size = int(batch_size)
        self._sums: dict = {}

    def __call__(self, policy: Any, obs: Any, acts: Any) -> BCTrainingMetrics:
        """BC's loss-calculator interface; the metrics are ``calculator``'s, unchanged."""
        metrics = self.calculator(policy, obs, acts)
        weight = len(acts) / self.batch_size
        for name, value in metrics.__dict__.items():
            if value is not None:
                value = value.detach() if weight == 1 else value.detach() * weight  # x * 1.0 is x
                self._sums[name] = value if name not in self._sums else self._sums[name] + value
        return metrics

    def pop(self) -> dict:
        """``{name: 0-d or (1,) tensor}``: the step's metrics (BC's ``neglogp``, ``entropy``, ``ent_loss``,
        ``prob_true_act``, ``l2_norm``, ``l2_loss``, ``loss``; those the calculator left ``None`` are missing), on
        the training device, detached; empties the recorder."""
        sums, self._sums = self._sums, {}
        return sums
