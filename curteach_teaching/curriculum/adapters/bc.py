"""The curriculum adapter for imitation's ``BC`` (docs: ``docs/teaching/curriculum.md``).

:class:`CurriculumBC` is a :class:`~curteach_teaching.curriculum.core.Curriculum` whose step trainer is
:class:`BCStepTrainer`: the learner's difficulty is read from the trainer's policy, and each batch is one optimizer
step of imitation's BC: the trainer's own policy, optimizer and loss (BC's loss, entropy and L2 terms, as
:class:`~curteach_teaching.curriculum.loss.BCLoss` computes them; a user's own ``loss_calculator`` as it is), with
the arithmetic of ``BC.train`` (each minibatch's loss times its share of the batch, backpropagated, then the
optimizer's step). The trainer's policy and optimizer persist across epochs.

The cheap step. The pool's demonstrations are put on the training device once
(:class:`~curteach_teaching.curriculum.resident.ResidentPool`), each epoch's batches are gathered there by index,
and the step's metrics stay there until someone reads them
(:class:`~curteach_teaching.curriculum.step_metrics.StepMetrics`): no copy between host and device and no
synchronisation per step. ``BC.train`` itself is not called per step: it would convert and copy every batch and log
(read) its metrics at every call. BC's own logger therefore records nothing per step; the curriculum's metrics and
its :class:`~curteach_teaching.curriculum.selection_logger.SelectionLogger` are the record. The log-probabilities
come without a distribution object (:func:`~curteach_teaching.learners.actor_scores.actor_log_prob`), and BC's
metrics that are logged only (``prob_true_act``, the entropy and the L2 norm at weight 0) are computed only when a
callback may read them (:meth:`BCStepTrainer.set_read_metrics`). On the CPU the numbers are those of ``BC.train`` to
the bit (the same tensors, the same arithmetic).

Batches (``batch_unit``). imitation's own loader drops a last incomplete batch and refuses data smaller than one
batch; here the batches are a fixed list of transition indices planned by the curriculum.

* ``"transitions"`` (default): batches of ``trainer.batch_size`` shuffled transitions, trained as minibatches of
  ``trainer.minibatch_size``; a smaller last batch (``remainder="partial"``) is stepped on the mean loss of its
  transitions.
* ``"demonstrations"`` (the original navigation code): batches of ``demos_per_batch`` whole demonstrations; one
  batch is one forward pass and one optimizer step, whatever its number of transitions (``trainer.minibatch_size``
  is not used).

Loss (``loss``). ``"mean"`` (default) is imitation's BC loss, the mean of ``-log pi(a | s)`` over the batch's
state-action pairs. ``"original"`` (demonstration batches only) is the original navigation code's, the sum over time
steps of the mean over the demonstrations still active (:class:`~curteach_teaching.curriculum.loss.StepMeanLoss`),
computed in place of BC's ``loss_calculator`` for each batch; BC's entropy and L2 terms keep their weights.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from imitation.algorithms.bc import BC
from imitation.data import rollout, types

from curteach_envs._util import check_int
from curteach_teaching.curriculum.batches import BATCH_UNITS, REMAINDERS, FixedStepBatches, make_batcher
from curteach_teaching.curriculum.core import Curriculum
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.loss import BCLoss, MetricsRecorder, StepMeanLoss, WeightedLoss
from curteach_teaching.curriculum.options import CurriculumOptions, check_demonstrations
from curteach_teaching.curriculum.policy_steps import PolicyStepTrainer
from curteach_teaching.curriculum.resident import ResidentPool
from curteach_teaching.curriculum.scores import teacher_difficulty
from curteach_teaching.curriculum.selection import CurriculumSelection
from curteach_teaching.curriculum.selection_logger import SelectionLogger
from curteach_teaching.difficulty import MIN_LOG_PROB
from curteach_teaching.learners.lean_step import optimizer_step

__all__ = ["LOSSES", "BCPool", "BCStepTrainer", "CurriculumBC", "check_bc_settings"]

#: ``"mean"``: imitation's per-pair mean; ``"original"``: the sum over time steps of the mean over active demos.
LOSSES = ("mean", "original")
#: Version tag of :meth:`CurriculumBC.state_dict`.
STATE_FORMAT = "curteach.CurriculumBC/1"


class BCStepTrainer(PolicyStepTrainer):
    """The :class:`~curteach_teaching.curriculum.core.StepTrainer` of an imitation ``BC`` trainer (learner difficulty
    and hook context: :class:`~curteach_teaching.curriculum.policy_steps.PolicyStepTrainer`).

    Args:
        trainer: the ``BC`` trainer (its policy and optimizer are trained in place).
        transitions: the flattened demonstrations (``rollout.flatten_trajectories``), laid out as ``index`` says.
        index: their :class:`~curteach_teaching.curriculum.index.DemonstrationIndex`.
        full_batch_size: batches of exactly this size go through one ``train`` call as minibatches of
            ``trainer.minibatch_size`` (transition batches); ``None``: every batch is its own one-minibatch call
            (demonstration batches).
        loss: ``"mean"`` or ``"original"`` (:class:`~curteach_teaching.curriculum.loss.StepMeanLoss` per batch).
        chunk_size, min_log_prob: of the learner-difficulty passes
            (:func:`~curteach_teaching.curriculum.scores.policy_difficulty`).
    """

    def __init__(
        self,
        trainer: BC,
        transitions: types.Transitions,
        index: DemonstrationIndex,
        *,
        full_batch_size: int | None = None,
        loss: str = "mean",
        chunk_size: int = 8192,
        min_log_prob: float = MIN_LOG_PROB,
    ):
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}; got {loss!r}")
        super().__init__(trainer, transitions, index, chunk_size=chunk_size, min_log_prob=min_log_prob)
        self.full_batch_size = full_batch_size
        self.loss = loss
        self._recorder: MetricsRecorder | None = None
        self._weights: np.ndarray | None = None
        self._pool: ResidentPool | None = None
        self._read: frozenset | None = None

    def set_read_metrics(self, names: frozenset | None) -> None:
        """The names of the step metrics someone reads in the steps to come (``None``: any; the default): BC's
        metrics that are logged only (:data:`~curteach_teaching.curriculum.loss.LOGGED_ONLY`: ``prob_true_act``,
        the entropy and the L2 norm at weight 0) are computed only when read. The loss and the steps are the
        same either way."""
        self._read = None if names is None else frozenset(names)

    def set_transition_weights(self, weights: np.ndarray | None) -> None:
        """The loss weight of every transition ``(T,)`` for the steps to come (:class:`WeightedLoss`), or ``None``
        (BC's own loss).

        Raises:
            ValueError: weights of another shape, negative or not finite, or with ``loss="original"``.
        """
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.shape != (self.index.n_transitions,):
                raise ValueError(f"transition weights must have shape ({self.index.n_transitions},); "
                                 f"got {weights.shape}")
            if not np.isfinite(weights).all() or (weights < 0).any():
                raise ValueError("transition weights must be finite and >= 0")
            if self.loss != "mean":
                raise ValueError("weighted training needs loss='mean' (BC's own loss, weighted per transition)")
        self._weights = weights

    def _resident(self) -> ResidentPool:
        """The pool on the policy's device (made on first use, again if the policy moved)."""
        device = self.trainer.policy.device
        if self._pool is None or self._pool.device != device:
            self._pool = ResidentPool(self.transitions.obs, self.transitions.acts, self.index.time_step, device)
        self._pool.set_weights(self._weights)
        return self._pool

    def train_batches(self, batches: Sequence[np.ndarray], after_step: Callable[[], None]) -> None:
        """One optimizer step per batch, in order, ``after_step()`` after each (see the module docstring)."""
        pool = self._resident()
        trainer = self.trainer
        base = trainer.loss_calculator
        bc_loss = BCLoss.of(base, self._read)  # BC's loss (or the user's calculator) for the unweighted steps
        with warnings.catch_warnings():
            # with Dict observations BC's loss calculator unwraps the plain dict of a batch again, warning at every
            # step about its own double unwrapping (harmless)
            warnings.filterwarnings("ignore", message="trying to unwrap object of type")
            trainer.optimizer.zero_grad()
            if self.full_batch_size is None:
                for group, (index, obs, acts) in zip(batches, pool.gathered(batches), strict=True):
                    loss = None
                    if self.loss == "original":
                        loss = StepMeanLoss(self.index.time_step[group], ent_weight=base.ent_weight,
                                            l2_weight=base.l2_weight, steps_tensor=pool.steps(index),
                                            read=self._read)
                    else:
                        loss = self._weighted(pool, [index])
                    self._step(pool, [index], group.size, after_step, loss if loss is not None else bc_loss,
                               rows=[(obs, acts)])
                    if loss is not None and loss.calls != 1:
                        raise RuntimeError(f"the loss of a batch was computed {loss.calls} times instead of once")
                return
            batch_size = self.full_batch_size
            minibatch = trainer.minibatch_size
            for group, index in zip(batches, pool.indices(batches)):
                # a full batch: minibatches of BC's minibatch_size, one step; the original's smaller last batch: a
                # step on the mean loss of its transitions
                pieces = ([index[i : i + minibatch] for i in range(0, batch_size, minibatch)]
                          if group.size == batch_size and minibatch < batch_size else [index])
                weighted = self._weighted(pool, pieces)
                self._step(pool, pieces, group.size, after_step, weighted if weighted is not None else bc_loss)
                if weighted is not None and weighted.calls != len(pieces):
                    raise RuntimeError(f"BC computed {weighted.calls} weighted minibatches of {len(pieces)}")

    def _weighted(self, pool: ResidentPool, pieces: list) -> WeightedLoss | None:
        if self._weights is None:
            return None
        base = self.trainer.loss_calculator
        return WeightedLoss([pool.weights(p) for p in pieces], ent_weight=getattr(base, "ent_weight", 0.0),
                            l2_weight=getattr(base, "l2_weight", 0.0), read=self._read)

    def _step(self, pool: ResidentPool, pieces: list, batch_size: int, after_step: Callable[[], None],
              loss: Any, rows: list | None = None) -> None:
        """One optimizer step of BC on the minibatches ``pieces`` (device index tensors) of a batch of
        ``batch_size`` transitions with the loss calculator ``loss``, as imitation's ``BC.train`` takes it: each
        minibatch's ``loss * b_k / batch_size`` backpropagated, then the optimizer's step and ``zero_grad``, then
        ``after_step()``; ``rows``: each minibatch's ``(obs, acts)`` where already gathered
        (:meth:`~curteach_teaching.curriculum.resident.ResidentPool.gathered`; ``None``: gathered here). Nothing here
        waits for the device (the metrics stay there: :meth:`step_metrics`)."""
        import torch as th

        trainer = self.trainer
        policy = trainer.policy
        self._recorder = MetricsRecorder(loss, batch_size)
        off_cpu = pool.device.type != "cpu"
        try:
            if off_cpu:
                # torch's distributions check their parameters' values at every step, which reads them from the
                # device (a synchronisation); the values are the same without the check (a NaN is then a NaN loss)
                validate = th.distributions.Distribution._validate_args
                th.distributions.Distribution.set_default_validate_args(False)
            try:
                for k, index in enumerate(pieces):
                    obs, acts = pool.batch(index) if rows is None else rows[k]
                    metrics = self._recorder(policy, obs, acts)
                    size = len(index)
                    if size == batch_size and batch_size & (batch_size - 1) == 0:
                        # x * b / b: its gradient is 1.0 * (1 / b) * b, exactly 1.0 for b a power of two
                        metrics.loss.backward()
                    else:  # BC.train's renormalisation, the same expression (the same float arithmetic)
                        (metrics.loss * size / batch_size).backward()
            finally:
                if off_cpu:
                    th.distributions.Distribution.set_default_validate_args(validate)
            optimizer_step(trainer.optimizer)
            trainer.optimizer.zero_grad()
            after_step()
        finally:
            self._recorder = None

    def step_metrics(self) -> dict:
        """``{name: 0-d tensor}``: BC's training metrics of the step just taken (``loss``, ``neglogp``,
        ``entropy``, ...; see :class:`~curteach_teaching.curriculum.loss.MetricsRecorder`), on the training device
        (the curriculum's :class:`~curteach_teaching.curriculum.step_metrics.StepMetrics` reads them when asked);
        empty outside a step."""
        return {} if self._recorder is None else self._recorder.pop()


class CurriculumBC(Curriculum):
    """Train an imitation ``BC`` trainer epoch by epoch on a curriculum over demonstrations.

    Args:
        trainer: an ``imitation.algorithms.bc.BC`` with any SB3 policy, on any Gymnasium env.
        demonstrations: the N ``imitation.data.types.Trajectory`` demonstrations (non-empty, each with >= 1 action).
        options: the options every adapter shares (:class:`~curteach_teaching.curriculum.options.CurriculumOptions`:
            variant, teacher, pacing, rng, min_log_prob, callbacks, log, difficulty_chunk_size); any of them may be
            given as a keyword instead (``variant="Cur-T", teacher=scores``). The generator defaults to
            ``trainer.rng``.
        remainder: ``"partial"`` (default) or ``"drop"``: the last, smaller batch of an epoch is trained or dropped.
        batch_unit: ``"transitions"`` (default: batches of ``trainer.batch_size`` shuffled transitions) or
            ``"demonstrations"`` (batches of ``demos_per_batch`` whole demonstrations); see the module docstring.
        demos_per_batch: demonstrations per batch with ``batch_unit="demonstrations"`` (>= 1; default
            ``trainer.batch_size``; the original: 32). Only for that unit.
        loss: ``"mean"`` (default) or ``"original"`` (needs ``batch_unit="demonstrations"`` and a trainer whose
            ``loss_calculator`` has ``ent_weight`` and ``l2_weight``, as BC's).
        steps_per_epoch: every epoch takes exactly this many optimizer steps on batches of ``trainer.batch_size``
            transitions drawn from its selection (:class:`~curteach_teaching.curriculum.batches.FixedStepBatches`:
            an equal budget for every curriculum); ``None`` (default): one pass over the selection. Transition
            batches only.

    Attributes:
        trainer, demonstrations, options: as given; step_trainer: the :class:`BCStepTrainer`.
        selection, step, callbacks, rng: see :class:`~curteach_teaching.curriculum.core.Curriculum`.

    Raises:
        ValueError: empty demonstrations, an unknown option, variant, remainder, batch unit or loss,
            ``loss="original"`` with transition batches, a non-positive ``demos_per_batch`` (or one given with
            transition batches), a malformed callback, a missing or mis-shaped teacher difficulty, actions outside a
            discrete action space.
    """

    def __init__(
        self,
        trainer: BC,
        demonstrations: Sequence[types.Trajectory],
        *,
        options: CurriculumOptions | None = None,
        remainder: str = "partial",
        batch_unit: str = "transitions",
        demos_per_batch: int | None = None,
        loss: str = "mean",
        steps_per_epoch: int | None = None,
        **shared: Any,
    ):
        options = CurriculumOptions.of("CurriculumBC", options, shared)
        demos_per_batch, steps_per_epoch = check_bc_settings(trainer, remainder=remainder, batch_unit=batch_unit,
                                                             demos_per_batch=demos_per_batch, loss=loss,
                                                             steps_per_epoch=steps_per_epoch, use=options.use)
        self.options = options
        self.min_log_prob = options.min_log_prob
        self.difficulty_chunk_size = options.difficulty_chunk_size
        self.trainer = trainer
        self.remainder = remainder
        self.batch_unit = batch_unit
        self.demos_per_batch = demos_per_batch
        self.loss = loss
        self.steps_per_epoch = steps_per_epoch
        unit_size = demos_per_batch if batch_unit == "demonstrations" else trainer.batch_size
        pool = BCPool(trainer, demonstrations, options, full_batch_size=None if batch_unit == "demonstrations"
                      else unit_size, loss=loss, adapter="CurriculumBC")
        self.demonstrations = pool.demonstrations
        callbacks = list(options.callbacks)
        if options.log:
            callbacks.insert(0, SelectionLogger(trainer.logger, pool.index.n_demonstrations, pool.teacher_scores))
        batcher = (make_batcher(batch_unit, unit_size, remainder) if steps_per_epoch is None
                   else FixedStepBatches(unit_size, steps_per_epoch))
        super().__init__(
            pool.step_trainer, pool.index,
            CurriculumSelection(pool.index.n_demonstrations, options.variant, pool.teacher_scores, options.pacing,
                                use=options.use, sizes=pool.index.lengths),
            batcher, rng=options.rng if options.rng is not None else trainer.rng, callbacks=callbacks,
            state_format=STATE_FORMAT, extra_config={"loss": loss},
        )


def check_bc_settings(trainer: BC, *, remainder: str, batch_unit: str, demos_per_batch: int | None, loss: str,
                      steps_per_epoch: int | None = None, use: Any = None) -> tuple[int | None, int | None]:
    """The BC step's own settings (see :class:`CurriculumBC`), checked once for every adapter that trains through
    BC, against the curriculum's ``use`` (:mod:`~curteach_teaching.curriculum.uses`; a weighted loss is BC's mean).

    Returns:
        ``(demos_per_batch, steps_per_epoch)``: the first ``trainer.batch_size`` by default with demonstration
        batches.

    Raises:
        ValueError: as :class:`CurriculumBC` says.
    """
    if remainder not in REMAINDERS:
        raise ValueError(f"remainder must be one of {REMAINDERS}; got {remainder!r}")
    if batch_unit not in BATCH_UNITS:
        raise ValueError(f"batch_unit must be one of {BATCH_UNITS}; got {batch_unit!r}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}; got {loss!r}")
    if loss == "original" and batch_unit != "demonstrations":
        raise ValueError(
            "loss='original' (the sum over time steps of the mean over active demonstrations) needs "
            "batch_unit='demonstrations'"
        )
    if batch_unit == "demonstrations":
        demos_per_batch = check_int(
            "demos_per_batch", trainer.batch_size if demos_per_batch is None else demos_per_batch, 1
        )
    elif demos_per_batch is not None:
        raise ValueError("demos_per_batch applies to batch_unit='demonstrations' only")
    if steps_per_epoch is not None:
        if batch_unit != "transitions":
            raise ValueError("steps_per_epoch applies to batch_unit='transitions' only")
        steps_per_epoch = check_int("steps_per_epoch", steps_per_epoch, 1)
    if use is not None and use.name == "weight" and loss != "mean":
        raise ValueError("use='weight' weights BC's own loss per transition; it needs loss='mean'")
    if loss == "original" and not all(hasattr(trainer.loss_calculator, a) for a in ("ent_weight", "l2_weight")):
        raise ValueError("loss='original' needs a trainer whose loss_calculator has ent_weight and l2_weight")
    return demos_per_batch, steps_per_epoch


class BCPool:
    """What a BC curriculum trains over one set of demonstrations: their layout, the step trainer on them and the
    teacher's scores of them (a pool that grows, DAgger's, makes one per round).

    Args:
        trainer: the ``BC`` trainer.
        demonstrations: the N ``Trajectory`` demonstrations.
        options: the adapter's :class:`~curteach_teaching.curriculum.options.CurriculumOptions` (teacher, floor,
            chunk size).
        full_batch_size, loss: as :class:`BCStepTrainer` takes them.
        adapter: the adapter's name, for the errors.

    Attributes:
        demonstrations: the checked list; index: their layout; step_trainer: the :class:`BCStepTrainer`;
        teacher_scores: ``(N,)`` ``log Psi^E`` or ``None`` without a teacher.

    Raises:
        ValueError: demonstrations that are not Trajectories, or actions outside a discrete action space.
    """

    def __init__(self, trainer: BC, demonstrations: Sequence[types.Trajectory], options: CurriculumOptions, *,
                 full_batch_size: int | None, loss: str, adapter: str):
        self.demonstrations = check_demonstrations(demonstrations, adapter)
        self.index = DemonstrationIndex.from_trajectories(self.demonstrations)
        transitions = rollout.flatten_trajectories(self.demonstrations)
        space = trainer.action_space
        acts = transitions.acts
        if hasattr(space, "n") and acts.size and (acts.min() < 0 or acts.max() >= space.n):
            raise ValueError(
                f"demonstrated actions must lie in [0, {space.n - 1}]; got values in [{acts.min()}, {acts.max()}]"
            )
        chunk, floor = options.difficulty_chunk_size, options.min_log_prob
        self.step_trainer = BCStepTrainer(trainer, transitions, self.index, full_batch_size=full_batch_size,
                                          loss=loss, chunk_size=chunk, min_log_prob=floor)
        self.teacher_scores = None if options.teacher is None else teacher_difficulty(
            options.teacher, transitions.obs, transitions.acts, self.index, chunk_size=chunk, min_log_prob=floor)
