"""A curriculum over demonstrations for any ``imitation.algorithms.bc.BC`` trainer (the paper's Algorithm 2).

Docs: ``docs/teaching/curriculum.md``. :class:`CurriculumBC` is the adapter between the curriculum's selection
(:mod:`curteach_teaching.selection`, plain NumPy) and imitation's ``BC``. At the start of every epoch ``e = 1..E`` it

1. **scores** every demonstration ``xi_i`` of the **whole** training set by the learner's current difficulty
   ``log Psi^L(xi_i) = -sum_tau log pi^L(a_tau | s_tau)``, read from the trainer's policy in batched, no-grad,
   evaluation-mode passes (:func:`curteach_teaching.difficulty.demonstration_log_likelihoods`, chunks of
   ``difficulty_chunk_size`` transitions; only for Cur and Cur-L). The teacher difficulty ``log Psi^E(xi_i)`` is
   scored once, in the constructor (from a teacher policy, a callable, given per-demonstration scores, or none);
2. **selects** the epoch's demonstrations with :class:`~curteach_teaching.selection.CurriculumSelection`: the
   preference by variant (Cur ``log Psi^L - log Psi^E``, Cur-L ``log Psi^L``, Cur-T ``-log Psi^E``, Agn all ``N``
   every epoch), the ranking (ties to the lower index) and the pacing (:class:`LinearPacing` ``a = 0.8``, ``b = 0.5``
   by default);
3. **batches** the selection (:meth:`CurriculumBC.epoch_batches`, see *Batches* below);
4. **trains** one epoch on them (:meth:`CurriculumBC.train_batches`) through ``trainer.set_demonstrations`` and
   ``trainer.train`` (BC's own loss, optimizer step, logging and ``on_batch_end``). The trainer's policy and
   optimizer persist across epochs. After every optimizer step the global step counter :attr:`CurriculumBC.step`
   (across epochs and ``train`` calls) advances and the hooks due at that step run (see *Hooks*);
5. **logs** the epoch (:class:`EpochRecord`: the selected fraction, the selected demonstrations and the statistics of
   their scores), so that a curriculum can be plotted (:meth:`CurriculumBC.selection_matrix`).

Batches (``batch_unit``). imitation's own loader drops a last incomplete batch and refuses data smaller than one
batch; here the batches are a fixed list of transition indices built before ``set_demonstrations``, so imitation's
peek at the first element (one extra ``__iter__``) changes nothing.

* ``"transitions"`` (default): the selected demonstrations' transitions are shuffled and cut into batches of
  ``trainer.batch_size`` transitions (as minibatches of ``trainer.minibatch_size``); with ``remainder="partial"``
  (default) the ``r`` left-over transitions form one more, smaller batch, stepped on the mean loss of those ``r``;
  with ``"drop"`` they wait for a later epoch's shuffle.
* ``"demonstrations"`` (the original navigation code): the selected demonstrations are randomly permuted and cut
  into consecutive groups of ``demos_per_batch`` whole demonstrations; one group is one batch (one forward pass and
  one optimizer step, whatever its number of transitions; ``trainer.minibatch_size`` is not used). With
  ``remainder="partial"`` the last, smaller group is kept (no drop), with ``"drop"`` it is dropped.

Either way a selection smaller than one batch is trained as one batch of its size; ``trainer.batch_size`` and
``minibatch_size`` are set to the size of a batch that differs from them for its ``train`` call, and restored.

Loss (``loss``). ``"mean"`` (default) is imitation's BC loss, the mean of ``-log pi(a | s)`` over the batch's
state-action pairs. ``"original"`` (demonstration batches only) is the original navigation code's, per batch of
demonstrations ``j`` of lengths ``L_j``::

    Loss = sum_{l = 0}^{max_j L_j - 1}  mean_{j : L_j > l}  -log pi(a_{j,l} | s_{j,l})

(late steps, where few demonstrations are still active, weigh as much as early ones). It goes through BC as a
``loss_calculator`` (:class:`StepMeanLoss`) installed for the one-batch ``train`` call of each group and given the
time step of each of its transitions; BC's entropy and L2 terms keep their weights (the entropy is weighted like the
log-likelihood; the original uses neither).

Hooks. ``hooks`` are called after optimizer step ``s`` (``s = 1, 2, ...``, counted globally) when ``s % every == 0``,
in order, with ``s``, e.g. an evaluation every 100 steps and :class:`StepLRHook`, the original's learning-rate
schedule (x0.5 every 5,000 steps). A :class:`StepHook` with ``at_start=True`` is also called with ``s = 0`` before
the first optimizer step (the original evaluates the initial network). The policy's training mode is restored after
the hooks (SB3's ``predict`` leaves it in evaluation mode).

Resuming. :meth:`CurriculumBC.state_dict` is everything of a run but the policy and the optimizer (which the caller
saves with torch): the global step, the history, the generator of the permutations and the hooks' states.
A run checkpointed after epoch ``k`` of ``E`` and resumed with :meth:`~CurriculumBC.load_state_dict` and
``train(E, start_epoch=k + 1)`` on a fresh trainer (policy and optimizer state loaded) gives the same result as an
uninterrupted one.

Extending. Each step of an epoch is one method of :class:`CurriculumBC` (:meth:`~CurriculumBC.learner_difficulty`,
``selection.select``, :meth:`~CurriculumBC.epoch_batches`, :meth:`~CurriculumBC.train_batches`,
``selection.log``, chained by :meth:`~CurriculumBC.train_epoch`), so another batch unit, loss or hook replaces one
step and leaves the selection and its log as they are.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from imitation.algorithms.bc import BC, BCTrainingMetrics
from imitation.data import rollout, types
from imitation.util import logger as imit_logger
from imitation.util import util
from stable_baselines3.common import logger as sb_logger

from curteach_envs._util import check_int, check_positive
from curteach_teaching.difficulty import (
    MIN_LOG_PROB,
    demonstration_log_likelihoods,
    index_observations,
    sum_per_demonstration,
)
from curteach_teaching.names import CUR
from curteach_teaching.selection import (
    VARIANTS,
    CurriculumSelection,
    EpochRecord,
    EpochSelection,
    FullPacing,
    LinearPacing,
    PacingSchedule,
    check_pacing,
    check_variant,
    needs_teacher_difficulty,
)

__all__ = [
    "VARIANTS",
    "REMAINDERS",
    "BATCH_UNITS",
    "LOSSES",
    "LinearPacing",
    "FullPacing",
    "EpochRecord",
    "CurriculumBC",
    "StepHook",
    "StepLRHook",
    "StepMeanLoss",
    "demonstration_log_likelihoods",
    "silent_logger",
]

REMAINDERS = ("partial", "drop")
#: What one batch is made of: shuffled transitions (imitation's way) or whole demonstrations (the original's).
BATCH_UNITS = ("transitions", "demonstrations")
#: ``"mean"``: imitation's per-pair mean; ``"original"``: the sum over time steps of the mean over active demos.
LOSSES = ("mean", "original")
#: Version tag of :meth:`CurriculumBC.state_dict`.
STATE_FORMAT = "curteach.CurriculumBC/1"

TeacherDifficulty = None | np.ndarray | Sequence[float] | Any | Callable[[Any, np.ndarray], np.ndarray]


def silent_logger() -> imit_logger.HierarchicalLogger:
    """An imitation logger with no output: pass it as ``BC(custom_logger=...)`` to stop BC printing a table at the
    first batch of every ``train`` call (which the curriculum makes once per epoch). Writes no files."""
    return imit_logger.HierarchicalLogger(sb_logger.Logger(folder=None, output_formats=[]), format_strs=[])


# ====================================================================================================== hooks
@dataclass(frozen=True)
class StepHook:
    """A callable run every ``every`` optimizer steps of a :class:`CurriculumBC`.

    Attributes:
        every: the period in optimizer steps (>= 1): ``fn(s)`` runs after global step ``s`` when ``s % every == 0``.
        fn: ``(step: int) -> Any``; its return value is ignored. If it has ``state_dict()`` / ``load_state_dict()``,
            :meth:`CurriculumBC.state_dict` saves its state with the run's.
        at_start: also run ``fn(0)`` before the first optimizer step of a run (e.g. evaluate the initial network).
    """

    every: int
    fn: Callable[[int], Any]
    at_start: bool = False

    def __post_init__(self) -> None:
        check_int("a hook's every", self.every, 1)
        if not callable(self.fn):
            raise ValueError(f"a hook must be callable (step) -> Any; got {self.fn!r}")
        if not isinstance(self.at_start, (bool, np.bool_)):
            raise ValueError(f"a hook's at_start must be a bool; got {self.at_start!r}")


def as_step_hook(hook: Any) -> StepHook:
    """A :class:`StepHook` from a ``StepHook``, an ``(every, fn)`` pair, or a callable with an ``every`` attribute
    (and optionally ``at_start``), e.g. :class:`StepLRHook`; else ``ValueError``."""
    if isinstance(hook, StepHook):
        return hook
    if isinstance(hook, tuple) and len(hook) == 2:
        return StepHook(hook[0], hook[1])
    if callable(hook) and hasattr(hook, "every"):
        return StepHook(hook.every, hook, bool(getattr(hook, "at_start", False)))
    raise ValueError(
        f"a hook must be a StepHook, an (every, callable) pair or a callable with an 'every' attribute; got {hook!r}"
    )


class StepLRHook:
    """Step decay of an optimizer's learning rate by global optimizer step: after step ``s`` every param group's
    LR is ``base_lr * gamma ** (s // period)`` (the original navigation code: ``gamma = 0.5`` every 5,000 batches;
    the paper says 500).

    Use it as a hook of :class:`CurriculumBC` (its :attr:`every` is ``period``): ``hooks=[StepLRHook(opt, 5000)]``.
    The LR is a function of the step, so calling it at other steps too (e.g. every 100, as the original steps its
    scheduler) changes nothing. It is resumable: :meth:`state_dict` holds the base LRs (the optimizer's LRs when the
    hook was made), which a resumed run must not take from an optimizer whose LR has already decayed.

    Args:
        optimizer: a torch optimizer, e.g. ``trainer.optimizer``.
        period: steps between decays (>= 1).
        gamma: the factor, finite and > 0 (0.5 halves).

    Attributes:
        base_lrs: the LR of each param group at step 0.
        last_step: the step of the last call (0 before any).
    """

    def __init__(self, optimizer: Any, period: int = 5000, gamma: float = 0.5):
        self.period = check_int("period", period, 1)
        check_positive("gamma", gamma)
        if not hasattr(optimizer, "param_groups"):
            raise ValueError(f"optimizer must be a torch optimizer (with param_groups); got {optimizer!r}")
        self.optimizer = optimizer
        self.gamma = float(gamma)
        self.base_lrs = [float(group["lr"]) for group in optimizer.param_groups]
        self.last_step = 0

    @property
    def every(self) -> int:
        """The hook period, ``period``."""
        return self.period

    def lrs_at(self, step: int) -> list[float]:
        """The LR of each param group after ``step`` optimizer steps."""
        factor = self.gamma ** (check_int("step", step, 0) // self.period)
        return [base * factor for base in self.base_lrs]

    def __call__(self, step: int) -> None:
        """Set the optimizer's LRs for the steps after ``step``."""
        for group, lr in zip(self.optimizer.param_groups, self.lrs_at(step), strict=True):
            group["lr"] = lr
        self.last_step = int(step)

    def state_dict(self) -> dict:
        """``{"period", "gamma", "base_lrs", "last_step"}`` (plain Python values)."""
        return {"period": self.period, "gamma": self.gamma, "base_lrs": list(self.base_lrs),
                "last_step": self.last_step}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` and set the optimizer's LRs for ``last_step``.

        Raises:
            ValueError: a state of another period, gamma or number of param groups.
        """
        if not isinstance(state, dict) or set(state) != {"period", "gamma", "base_lrs", "last_step"}:
            raise ValueError(f"not a StepLRHook state: {state!r}")
        if state["period"] != self.period or state["gamma"] != self.gamma:
            raise ValueError(
                f"the saved LR schedule (period {state['period']}, gamma {state['gamma']}) differs from this one "
                f"(period {self.period}, gamma {self.gamma})"
            )
        if len(state["base_lrs"]) != len(self.optimizer.param_groups):
            raise ValueError(
                f"the saved LR schedule has {len(state['base_lrs'])} param groups; the optimizer has "
                f"{len(self.optimizer.param_groups)}"
            )
        self.base_lrs = [float(lr) for lr in state["base_lrs"]]
        self(check_int("last_step", state["last_step"], 0))


# ======================================================================================================= loss
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

    Attributes:
        calls: how many batches it has computed (:class:`CurriculumBC` installs one per batch and checks it is 1).
    """

    def __init__(self, steps: np.ndarray, ent_weight: float = 0.0, l2_weight: float = 0.0):
        steps = np.asarray(steps)
        if steps.ndim != 1 or steps.size == 0 or not np.issubdtype(steps.dtype, np.integer) or steps.min() < 0:
            raise ValueError(f"steps must be a non-empty 1-D array of integers >= 0; got {steps!r}")
        self.steps = steps.astype(np.int64)
        self.n_steps = int(self.steps.max()) + 1
        self.ent_weight = float(ent_weight)
        self.l2_weight = float(l2_weight)
        self.calls = 0
        self._tensors: dict = {}

    def _steps_and_counts(self, device: Any) -> tuple[Any, Any]:
        import torch as th

        key = str(device)
        if key not in self._tensors:
            steps = th.as_tensor(self.steps, device=device)
            counts = th.bincount(steps, minlength=self.n_steps).clamp(min=1)
            self._tensors[key] = steps, counts
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
        import torch as th

        tensor_obs = types.map_maybe_dict(util.safe_to_tensor, types.maybe_unwrap_dictobs(obs))
        acts = util.safe_to_tensor(acts)
        if len(acts) != len(self.steps):
            raise ValueError(
                f"StepMeanLoss got a batch of {len(acts)} transitions for {len(self.steps)} time steps; a loss "
                "calculator made for one batch was used on another"
            )
        self.calls += 1
        _, log_prob, entropy = policy.evaluate_actions(tensor_obs, acts)
        log_prob = log_prob.reshape(-1)
        neglogp = self._step_mean_sum(-log_prob, log_prob.device)
        prob_true_act = th.exp(log_prob).mean()
        entropy = self._step_mean_sum(entropy.reshape(-1), log_prob.device) if entropy is not None else None
        with th.set_grad_enabled(th.is_grad_enabled() and self.l2_weight != 0):  # BC logs it even at weight 0
            l2_norm = sum(th.sum(th.square(w)) for w in policy.parameters()) / 2
        ent_loss = -self.ent_weight * (entropy if entropy is not None else th.zeros(1, device=log_prob.device))
        l2_loss = self.l2_weight * l2_norm
        return BCTrainingMetrics(
            neglogp=neglogp,
            entropy=entropy,
            ent_loss=ent_loss,
            prob_true_act=prob_true_act,
            l2_norm=l2_norm,
            l2_loss=l2_loss,
            loss=neglogp + ent_loss + l2_loss,
        )


# ================================================================================================ the adapter
class CurriculumBC:
    """Train an imitation ``BC`` trainer epoch by epoch on a curriculum over demonstrations.

    Args:
        trainer: an ``imitation.algorithms.bc.BC`` with any SB3 policy, on any Gymnasium env.
        demonstrations: the N ``imitation.data.types.Trajectory`` demonstrations (non-empty, each with >= 1 action).
        variant: ``"Cur"`` (default), ``"Cur-L"``, ``"Cur-T"`` or ``"Agn"``.
        teacher: the teacher difficulty, needed by Cur and Cur-T:

            * a ``(N,)`` array of per-demonstration scores ``log Psi^E(xi_i)`` (larger = harder for the teacher), e.g.
              a task-specific score;
            * an SB3 policy (anything with ``evaluate_actions``): ``log Psi^E = -sum_tau log pi^E(a | s)``;
            * a callable ``(obs (T, ...), acts (T,)) -> (T,)`` returning ``log pi^E(a_tau | s_tau)``, e.g.
              ``lambda obs, acts: log_pi_E[obs, acts]`` for a tabular teacher;
            * ``None`` (only for Cur-L and Agn).
        pacing: ``(epoch, n_epochs, n_items) -> int``; default :class:`LinearPacing` ``(0.8, 0.5)``. Agn ignores it.
        rng: the generator that shuffles each epoch's transitions or demonstrations; default ``trainer.rng``.
        remainder: ``"partial"`` (default) or ``"drop"``: the last, smaller batch of an epoch is trained or dropped.
        min_log_prob: floor of every per-step log-probability (teacher policy, teacher callable and learner alike),
            so that a probability of 0 gives a finite score (default
            :data:`~curteach_teaching.difficulty.MIN_LOG_PROB`, as the teachers' scores). A NaN from an SB3 policy
            counts as the floor; a NaN from a teacher callable is an error (``ValueError``).
        batch_unit: ``"transitions"`` (default: batches of ``trainer.batch_size`` shuffled transitions) or
            ``"demonstrations"`` (batches of ``demos_per_batch`` whole demonstrations); see the module docstring.
        demos_per_batch: demonstrations per batch with ``batch_unit="demonstrations"`` (>= 1; default
            ``trainer.batch_size``; the original: 32). Only for that unit.
        loss: ``"mean"`` (default, imitation's per-pair mean) or ``"original"`` (per batch, the sum over time steps
            of the mean over the demonstrations still active; needs ``batch_unit="demonstrations"`` and a trainer
            whose ``loss_calculator`` has ``ent_weight`` and ``l2_weight``, as BC's).
        hooks: run after optimizer steps: :class:`StepHook` objects, ``(every, fn)`` pairs or callables with an
            ``every`` attribute (e.g. :class:`StepLRHook`); see the module docstring.
        difficulty_chunk_size: transitions per no-grad forward pass of the difficulty scores (>= 1; default 8192).

    Attributes:
        selection: the :class:`~curteach_teaching.selection.CurriculumSelection` (variant, teacher difficulty,
            pacing and the log); ``variant``, ``teacher_difficulty``, ``pacing`` and ``history`` read and write it.
        step: optimizer steps taken so far, counted across epochs and ``train`` calls (0 before training).
        hooks: the :class:`StepHook` list, in call order (append with :meth:`add_hook`).

    Raises:
        ValueError: empty demonstrations, an unknown variant, remainder, batch unit or loss, ``loss="original"``
            with transition batches, a non-positive ``demos_per_batch`` (or one given with transition batches), a
            malformed hook, a missing or mis-shaped teacher difficulty, actions outside a discrete action space.
    """

    def __init__(
        self,
        trainer: BC,
        demonstrations: Sequence[types.Trajectory],
        *,
        variant: str = CUR,
        teacher: TeacherDifficulty = None,
        pacing: PacingSchedule | None = None,
        rng: np.random.Generator | None = None,
        remainder: str = "partial",
        min_log_prob: float = MIN_LOG_PROB,
        batch_unit: str = "transitions",
        demos_per_batch: int | None = None,
        loss: str = "mean",
        hooks: Sequence[Any] = (),
        difficulty_chunk_size: int = 8192,
    ):
        check_variant(variant)
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
        if loss == "original" and not all(hasattr(trainer.loss_calculator, a) for a in ("ent_weight", "l2_weight")):
            raise ValueError("loss='original' needs a trainer whose loss_calculator has ent_weight and l2_weight")
        check_pacing(pacing)
        if isinstance(hooks, (str, bytes)) or not isinstance(hooks, Sequence):
            raise ValueError(f"hooks must be a sequence of hooks; got {hooks!r}")
        step_hooks = [as_step_hook(hook) for hook in hooks]
        demonstrations = list(demonstrations)
        if not demonstrations:
            raise ValueError("demonstrations must hold at least one Trajectory; got an empty list")
        for i, demo in enumerate(demonstrations):
            if not isinstance(demo, types.Trajectory):
                raise ValueError(f"demonstration {i} is a {type(demo).__name__}, not an imitation Trajectory")
            if len(demo.acts) < 1:
                raise ValueError(f"demonstration {i} has no actions; every demonstration needs at least one")
        self.trainer = trainer
        self.demonstrations = demonstrations
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
        if isinstance(min_log_prob, bool) or not isinstance(min_log_prob, (int, float)) or not (
            np.isfinite(min_log_prob) and min_log_prob <= 0
        ):
            raise ValueError(f"min_log_prob must be a finite number <= 0 (a log-prob floor); got {min_log_prob!r}")
        self.rng = rng if rng is not None else trainer.rng
        self.remainder = remainder
        self.min_log_prob = float(min_log_prob)
        self.batch_unit = batch_unit
        self.demos_per_batch = demos_per_batch
        self.loss = loss
        self.hooks: list[StepHook] = step_hooks
        self.difficulty_chunk_size = check_int("difficulty_chunk_size", difficulty_chunk_size, 1)
        self.step = 0

        lengths = np.array([len(demo.acts) for demo in demonstrations])
        self.n_demonstrations = len(demonstrations)
        self._transitions = rollout.flatten_trajectories(demonstrations)
        self._demo_of_transition = np.repeat(np.arange(self.n_demonstrations), lengths)
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self._lengths = lengths
        self._time_step = np.arange(lengths.sum()) - np.repeat(self._starts, lengths)
        space = trainer.action_space
        acts = self._transitions.acts
        if hasattr(space, "n") and acts.size and (acts.min() < 0 or acts.max() >= space.n):
            raise ValueError(
                f"demonstrated actions must lie in [0, {space.n - 1}]; got values in [{acts.min()}, {acts.max()}]"
            )

        if needs_teacher_difficulty(variant) and teacher is None:
            raise ValueError(f"variant {variant!r} needs a teacher difficulty (scores, a policy or a callable)")
        teacher_difficulty = None if teacher is None else self._teacher_difficulty(teacher)
        self.selection = CurriculumSelection(self.n_demonstrations, variant, teacher_difficulty, pacing)

    # ------------------------------------------------- the selection's state
    @property
    def variant(self) -> str:
        """``"Cur"``, ``"Cur-L"``, ``"Cur-T"`` or ``"Agn"``."""
        return self.selection.variant

    @variant.setter
    def variant(self, value: str) -> None:
        self.selection.variant = value

    @property
    def teacher_difficulty(self) -> np.ndarray | None:
        """``(N,)`` ``log Psi^E`` per demonstration, or ``None``."""
        return self.selection.teacher_difficulty

    @teacher_difficulty.setter
    def teacher_difficulty(self, value: np.ndarray | None) -> None:
        self.selection.teacher_difficulty = value

    @property
    def pacing(self) -> PacingSchedule:
        """The pacing schedule ``(epoch, n_epochs, n_items) -> X_e``."""
        return self.selection.pacing

    @pacing.setter
    def pacing(self, value: PacingSchedule) -> None:
        self.selection.pacing = value

    @property
    def history(self) -> list[EpochRecord]:
        """The :class:`EpochRecord` of every epoch trained so far."""
        return self.selection.history

    @history.setter
    def history(self, value: list[EpochRecord]) -> None:
        self.selection.history = value

    # ----------------------------------------------------------------- scores
    def _teacher_difficulty(self, teacher: TeacherDifficulty) -> np.ndarray:
        obs, acts = self._transitions.obs, self._transitions.acts
        N = self.n_demonstrations
        if hasattr(teacher, "evaluate_actions"):
            return -demonstration_log_likelihoods(
                teacher, obs, acts, self._demo_of_transition, N, chunk_size=self.difficulty_chunk_size,
                min_log_prob=self.min_log_prob,
            )
        if callable(teacher):
            per_step = np.asarray(teacher(obs, acts), dtype=np.float64).reshape(-1)
            if per_step.shape != (len(acts),):
                raise ValueError(
                    f"the teacher callable must return {len(acts)} log-probabilities; got {per_step.shape}"
                )
            if np.isnan(per_step).any():
                raise ValueError("the teacher callable returned NaN log-probabilities")
            positive = np.flatnonzero(per_step > 1e-9)  # log pi <= 0; a rounding error of a log-softmax is tolerated
            if positive.size:
                raise ValueError(
                    f"the teacher callable returned {positive.size} log-probabilities > 0 (first: "
                    f"{float(per_step[positive[0]])!r} at transition {positive[0]}); a log-probability is at most 0"
                )
            return -sum_per_demonstration(per_step, self._demo_of_transition, N, self.min_log_prob)
        scores = np.asarray(teacher, dtype=np.float64)
        if scores.shape != (N,):
            raise ValueError(f"teacher scores must have shape ({N},), one per demonstration; got {scores.shape}")
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise ValueError(
                f"teacher scores must be finite; {bad.size} are not "
                f"(first: {float(scores[bad[0]])!r} for demonstration {bad[0]})"
            )
        return scores.copy()

    def learner_difficulty(self) -> np.ndarray:
        """``(N,)`` ``log Psi^L(xi_i) = -sum_tau log pi^L(a | s)`` of all N demonstrations under the trainer's current
        policy: no-grad, evaluation-mode passes of ``difficulty_chunk_size`` transitions (the mode is restored)."""
        obs, acts = self._transitions.obs, self._transitions.acts
        return -demonstration_log_likelihoods(
            self.trainer.policy, obs, acts, self._demo_of_transition, self.n_demonstrations,
            chunk_size=self.difficulty_chunk_size, min_log_prob=self.min_log_prob,
        )

    def preferences(self, learner_difficulty: np.ndarray | None) -> np.ndarray | None:
        """``(N,)`` preference by variant (larger = earlier); ``None`` for Agn."""
        return self.selection.preference(learner_difficulty)

    # ---------------------------------------------------------------- selection
    def select(self, epoch: int, n_epochs: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The demonstrations of epoch ``epoch`` of ``n_epochs``, most preferred first (the policy is scored now).

        Returns:
            ``(selected (X_e,), preferences (N,) or None, learner difficulty (N,) or None)``.
        """
        chosen = self._select(epoch, n_epochs)
        return chosen.selected, chosen.preference, chosen.learner_difficulty

    def _select(self, epoch: int, n_epochs: int) -> EpochSelection:
        learner = self.learner_difficulty() if self.selection.needs_learner_difficulty else None
        return self.selection.select(epoch, n_epochs, learner)

    # ---------------------------------------------------------------- batches
    def epoch_batches(self, selected: np.ndarray) -> list[np.ndarray]:
        """The epoch's batches: one array of transition indices per optimizer step, in training order.

        ``batch_unit="transitions"``: the selected demonstrations' transitions are shuffled (with :attr:`rng`) and cut
        into batches of ``trainer.batch_size``. ``"demonstrations"``: the selected demonstrations are permuted (with
        :attr:`rng`) and cut into consecutive groups of ``demos_per_batch``; a batch is the transitions of its group,
        demonstration after demonstration, each in time order. The left-over transitions or demonstrations form one
        smaller batch (``remainder="partial"``) or are dropped (``"drop"``); a selection smaller than one batch is
        one batch of its size.

        Args:
            selected: ``(X_e,)`` indices of the demonstrations to train on.

        Returns:
            A list of ``(b,)`` int indices into the flattened transitions of all demonstrations.
        """
        if self.batch_unit == "demonstrations":
            return self._demonstration_batches(selected)
        starts, lengths = self._starts[selected], self._lengths[selected]
        index = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)])
        index = index[self.rng.permutation(index.size)]
        batch_size = self.trainer.batch_size
        if index.size < batch_size:  # smaller than one batch: one (partial) batch of its size
            return [index]
        n_full = index.size // batch_size
        groups = [index[i * batch_size : (i + 1) * batch_size] for i in range(n_full)]
        if self.remainder == "partial" and index.size > n_full * batch_size:
            groups.append(index[n_full * batch_size :])
        return groups

    def _demonstration_batches(self, selected: np.ndarray) -> list[np.ndarray]:
        order = np.asarray(selected)[self.rng.permutation(len(selected))]
        k = self.demos_per_batch
        n_demos = order.size if order.size <= k or self.remainder == "partial" else order.size // k * k
        order = order[:n_demos]
        lengths = self._lengths[order]
        # the transitions of the permuted demonstrations, one after the other
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        index = np.repeat(self._starts[order], lengths) + offsets
        ends = np.cumsum(lengths)[k - 1 : n_demos - 1 : k]  # transitions before each group boundary
        return np.split(index, ends)

    def _batch(self, index: np.ndarray) -> dict:
        return {"obs": index_observations(self._transitions.obs, index), "acts": self._transitions.acts[index]}

    def time_steps(self, index: np.ndarray) -> np.ndarray:
        """``(b,)`` the time step of each transition ``index`` in its demonstration (0 for its first action)."""
        return self._time_step[index]

    def train_batches(self, groups: list[np.ndarray]) -> tuple[int, int]:
        """Train one pass over ``groups`` (index arrays from :meth:`epoch_batches`), keeping policy and optimizer;
        one optimizer step per group, each followed by the hooks due at the new :attr:`step`.

        ``batch_unit="transitions"``: groups of ``trainer.batch_size`` go through one ``train`` call as minibatches; a
        smaller group is one step on its mean loss. ``"demonstrations"``: each group is one ``train`` call of one
        batch, with :class:`StepMeanLoss` of its :meth:`time_steps` when ``loss="original"``.

        Returns:
            ``(transitions trained on, optimizer steps)``.
        """
        if self.batch_unit == "demonstrations":
            for group in groups:
                loss = None
                if self.loss == "original":
                    base = self.trainer.loss_calculator
                    loss = StepMeanLoss(self.time_steps(group), base.ent_weight, base.l2_weight)
                self._train_once([self._batch(group)], group.size, group.size, loss)
                if loss is not None and loss.calls != 1:
                    raise RuntimeError(f"the loss of a batch was computed {loss.calls} times instead of once")
            return sum(g.size for g in groups), len(groups)
        trainer = self.trainer
        batch_size = trainer.batch_size
        full = [g for g in groups if g.size == batch_size]
        partial = [g for g in groups if g.size != batch_size]
        minibatch = trainer.minibatch_size
        n = 0
        if full:
            batches = [self._batch(g[i : i + minibatch]) for g in full for i in range(0, batch_size, minibatch)]
            self._train_once(batches, batch_size, minibatch)
            n += sum(g.size for g in full)
        for group in partial:  # the original's smaller last batch: a step on the mean loss of its transitions
            self._train_once([self._batch(group)], group.size, group.size)
            n += group.size
        return n, len(groups)

    def _train_once(self, batches: list, batch_size: int, minibatch_size: int, loss: Any = None) -> None:
        trainer = self.trainer
        saved = trainer.batch_size, trainer.minibatch_size, trainer.loss_calculator
        trainer.batch_size, trainer.minibatch_size = batch_size, minibatch_size
        if loss is not None:
            trainer.loss_calculator = loss
        try:
            # a list: imitation's peek (get_first_iter_element) iterates it once more without consuming anything
            trainer.set_demonstrations(batches)
            trainer.train(n_epochs=1, progress_bar=False, log_interval=10**9, on_batch_end=self._after_step)
        finally:
            trainer.batch_size, trainer.minibatch_size, trainer.loss_calculator = saved

    # -------------------------------------------------------------------- hooks
    def add_hook(self, every: int, fn: Callable[[int], Any], *, at_start: bool = False) -> StepHook:
        """Append a hook ``fn(step)`` run after every ``every``-th optimizer step (and at step 0 if ``at_start``)."""
        hook = StepHook(every, fn, at_start)
        self.hooks.append(hook)
        return hook

    def _after_step(self) -> None:
        self.step += 1
        self._run_hooks(self.step)

    def _run_hooks(self, step: int) -> None:
        due = [h for h in self.hooks if (h.at_start if step == 0 else step % h.every == 0)]
        if not due:
            return
        policy = self.trainer.policy
        was_training = policy.training
        try:
            for hook in due:
                hook.fn(step)
        finally:
            policy.set_training_mode(was_training)

    # -------------------------------------------------------------------- train
    def train_epoch(self, epoch: int, n_epochs: int, *, max_steps: int | None = None) -> EpochRecord:
        """One curriculum epoch (``epoch`` of ``n_epochs`` of the pacing schedule): score, select, batch, train, log.

        Args:
            epoch, n_epochs: the position in the pacing schedule (epoch 1-based).
            max_steps: stop once :attr:`step` reaches it (the epoch's later batches are not trained; the record
                counts what was); ``None``: train the whole epoch.

        Returns:
            Its :class:`EpochRecord` (also appended to :attr:`history`).
        """
        chosen = self._select(epoch, n_epochs)
        groups = self.epoch_batches(chosen.selected)
        if max_steps is not None:
            groups = groups[: max(0, max_steps - self.step)]
        n_transitions, n_batches = self.train_batches(groups)
        return self.selection.log(chosen, n_transitions, n_batches)

    def train(
        self,
        n_epochs: int,
        *,
        start_epoch: int = 1,
        max_steps: int | None = None,
        on_epoch_end: Callable[[EpochRecord], None] | None = None,
    ) -> list[EpochRecord]:
        """Run epochs ``e = start_epoch..n_epochs`` of an ``n_epochs``-epoch pacing schedule.

        Hooks with ``at_start`` run with step 0 first if nothing has been trained yet (:attr:`step` is 0).

        Args:
            n_epochs: E, at least 1.
            start_epoch: the first epoch to run, in ``[1, E + 1]`` (``E + 1`` runs nothing); to resume a run saved
                after epoch ``k``, :meth:`load_state_dict` and ``start_epoch = k + 1``.
            max_steps: stop once the global :attr:`step` reaches it (>= 1), mid-epoch if need be; ``None``: no limit.
            on_epoch_end: called with each epoch's :class:`EpochRecord`.

        Returns:
            The records of these epochs (also appended to :attr:`history`).
        """
        check_int("n_epochs", n_epochs, 1)
        check_int("start_epoch", start_epoch, 1, n_epochs + 1)
        if max_steps is not None:
            check_int("max_steps", max_steps, 1)
        if self.step == 0 and start_epoch <= n_epochs:
            self._run_hooks(0)
        records = []
        for epoch in range(start_epoch, n_epochs + 1):
            if max_steps is not None and self.step >= max_steps:
                break
            record = self.train_epoch(epoch, n_epochs, max_steps=max_steps)
            records.append(record)
            if on_epoch_end is not None:
                on_epoch_end(record)
        return records

    # --------------------------------------------------------------- checkpoints
    def _config(self) -> dict:
        return {
            "n_demonstrations": self.n_demonstrations,
            "n_transitions": int(self._lengths.sum()),
            "variant": self.variant,
            "batch_unit": self.batch_unit,
            "demos_per_batch": self.demos_per_batch,
            "loss": self.loss,
            "remainder": self.remainder,
        }

    def state_dict(self) -> dict:
        """Everything of the run but the policy and the optimizer (save those with torch), as plain Python values
        (``torch.save(..., weights_only)`` and JSON can hold it).

        Returns:
            ``{"format", "config", "step", "rng", "history", "hooks"}``: the checked configuration (number of
            demonstrations and transitions, variant, batch unit, demonstrations per batch, loss, remainder), the
            global optimizer step, the state of :attr:`rng` (permutations and shuffles), the history
            (:class:`EpochRecord` fields as a dict per epoch), and the ``state_dict()`` of each hook that has one
            (``None`` for the others).
        """
        history = [
            {**dataclasses.asdict(record), "selected": np.asarray(record.selected).tolist()} for record in self.history
        ]
        for record in history:
            record.update({k: v.item() for k, v in record.items() if isinstance(v, np.generic)})
        return {
            "format": STATE_FORMAT,
            "config": self._config(),
            "step": self.step,
            "rng": copy.deepcopy(self.rng.bit_generator.state),
            "history": history,
            "hooks": [hook.fn.state_dict() if hasattr(hook.fn, "state_dict") else None for hook in self.hooks],
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (after the caller has restored the policy and the optimizer).

        Raises:
            ValueError: not such a state, a state of another configuration (demonstrations, variant, batch unit,
                loss, ...), of another generator, or with hook states that the hooks cannot take.
        """
        keys = {"format", "config", "step", "rng", "history", "hooks"}
        if not isinstance(state, dict) or set(state) != keys or state["format"] != STATE_FORMAT:
            raise ValueError(f"not a CurriculumBC state ({STATE_FORMAT}, keys {sorted(keys)})")
        config = self._config()
        if state["config"] != config:
            differ = sorted(k for k in config if state["config"].get(k) != config[k])
            raise ValueError(f"the saved curriculum differs from this one in {differ}: {state['config']} vs {config}")
        step = check_int("step", state["step"], 0)
        rng_state = state["rng"]
        if not isinstance(rng_state, dict) or rng_state.get("bit_generator") != type(self.rng.bit_generator).__name__:
            raise ValueError(f"the saved generator state does not fit {type(self.rng.bit_generator).__name__}")
        hook_states = state["hooks"]
        if not isinstance(hook_states, list) or len(hook_states) != len(self.hooks):
            raise ValueError(f"the state has {len(hook_states)} hook states for {len(self.hooks)} hooks")
        for hook, hook_state in zip(self.hooks, hook_states, strict=True):
            if hook_state is not None and not hasattr(hook.fn, "load_state_dict"):
                raise ValueError(f"the hook {hook.fn!r} cannot load a saved state")
        field_names = {f.name for f in dataclasses.fields(EpochRecord)}
        try:
            history = [
                EpochRecord(**{**record, "selected": np.asarray(record["selected"], dtype=np.int64)})
                for record in state["history"]
            ]
        except (TypeError, KeyError) as error:
            raise ValueError(f"the saved history is not a list of EpochRecords ({sorted(field_names)})") from error
        for hook, hook_state in zip(self.hooks, hook_states, strict=True):
            if hook_state is not None:
                hook.fn.load_state_dict(hook_state)
        self.rng.bit_generator.state = copy.deepcopy(rng_state)
        self.step = step
        self.history = history

    # ------------------------------------------------------------------ logging
    def selection_matrix(self) -> np.ndarray:
        """``(epochs so far, N)`` bool: demonstration ``i`` was trained on in epoch ``e`` (for curriculum plots)."""
        return self.selection.selection_matrix()

    def log_table(self) -> dict:
        """The per-epoch log as columns: ``{"epoch": (E,), "fraction": (E,), ...}`` (every scalar field)."""
        return self.selection.log_table()
