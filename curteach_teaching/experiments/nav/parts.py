"""The parts of a navigation run, each usable on its own (in a notebook, a test or another experiment).

* :func:`nav_trainer`: imitation's ``BC`` as the original trains the CNN (plain SGD, no entropy or L2 term);
* :func:`nav_curriculum`: :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` over a prepared dataset's
  training demonstrations, with batches of whole demonstrations, the original loss and the learning-rate schedule;
* :class:`BestModel`: model selection on the validation split (the best model and its test return);
* :class:`FeatureTracker`: the moving average of the trained demonstrations' features (a callback of the
  curriculum's batches);
* :class:`RunCheckpoint`: one run's checkpoint file.

:class:`~curteach_teaching.experiments.nav.run.NavRun` assembles them into the experiment's run.
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from curteach_envs._util import atomic_write
from curteach_teaching.curriculum.callbacks import BatchInfo, CurriculumCallback

__all__ = ["FEATURE_WINDOW", "BestModel", "FeatureTracker", "RunCheckpoint", "nav_curriculum", "nav_trainer"]

#: Moving-average window of the curriculum features, in batches (the appendix's figures).
FEATURE_WINDOW = 100


def nav_trainer(policy: Any, *, learning_rate: float, batch_size: int, rng: np.random.Generator, device: str,
                optimizer: str = "sgd") -> Any:
    """imitation's ``BC`` for the navigation CNN: plain SGD (or Adam) at ``learning_rate``, no entropy or L2 term,
    silent.

    Args:
        policy: the policy to train (e.g. ``NavigationCNNPolicy.for_navigation(seed=...)``).
        learning_rate: the optimizer's rate (the original: SGD at 0.01).
        batch_size: BC's batch size (demonstrations per batch under the curriculum).
        rng: BC's generator; device: where it trains.
        optimizer: ``"sgd"`` (the original's, no momentum) or ``"adam"`` (opt-in; ``torch.optim.Adam``'s defaults).
    """
    from curteach_teaching.learners.factory import make_bc_trainer

    return make_bc_trainer(policy, policy.observation_space, policy.action_space, batch_size=batch_size,
                           learning_rate=learning_rate, rng=rng, device=device, optimizer=optimizer, ent_weight=0.0,
                           l2_weight=0.0)


def nav_curriculum(
    trainer: Any,
    data: Any,
    *,
    variant: str,
    rng: np.random.Generator,
    teacher_difficulty: str = "original",
    demos_per_batch: int = 32,
    loss: str = "original",
    pacing_a: float = 0.8,
    pacing_b: float = 0.5,
    lr_period: int = 5000,
) -> Any:
    """The navigation experiment's curriculum over ``data.trajectories``, with the original's learning-rate schedule
    (x0.5 every ``lr_period`` optimizer steps) as its one callback.

    Args:
        trainer: the ``BC`` trainer (:func:`nav_trainer`).
        data: a :class:`~curteach_teaching.experiments.nav.data.PreparedDataset`.
        variant: ``"Agn"``, ``"Cur"``, ``"Cur-L"`` or ``"Cur-T"``.
        rng: the generator of the permutations.
        teacher_difficulty: ``"original"`` or ``"paper"`` (the task-specific score; read by Cur and Cur-T).
        demos_per_batch, loss, pacing_a, pacing_b, lr_period: as
            :class:`~curteach_teaching.experiments.nav.experiment.NavExperiment`.
    """
    from curteach_teaching.curriculum.adapters.bc import CurriculumBC
    from curteach_teaching.curriculum.lr_schedule import StepLRSchedule
    from curteach_teaching.curriculum.pacing import LinearPacing
    from curteach_teaching.curriculum.selection import needs_teacher_difficulty

    teacher = data.teacher[teacher_difficulty] if needs_teacher_difficulty(variant) else None
    return CurriculumBC(
        trainer,
        data.trajectories,
        variant=variant,
        teacher=teacher,
        pacing=LinearPacing(pacing_a, pacing_b),
        rng=rng,
        batch_unit="demonstrations",
        demos_per_batch=demos_per_batch,
        loss=loss,
        callbacks=[StepLRSchedule(trainer.optimizer, period=lr_period, gamma=0.5)],
    )


class FeatureTracker(CurriculumCallback):
    """The mean features of the demonstrations started in each of the last ``window`` batches, and how many
    demonstrations have been trained on (a callback of a curriculum's batches).

    Args:
        features: ``(N, F)`` the features of the curriculum's N demonstrations.
        names: the F feature names.
        window: batches in the moving average (:data:`FEATURE_WINDOW`).

    Attributes:
        seen: demonstrations trained on so far (each counted in the batch with its first transition).
    """

    reads_metrics = frozenset()  # only the batch's demonstrations

    def __init__(self, features: np.ndarray, names: tuple = (), window: int = FEATURE_WINDOW):
        self.features = np.asarray(features)
        self.names = tuple(names)
        self.window: deque = deque(maxlen=window)
        self.seen = 0

    def on_batch(self, batch: BatchInfo) -> None:
        """Add the mean features of the batch's demonstrations that start in it."""
        demos = batch.index.demo_of_transition[batch.transitions[batch.time_steps == 0]]
        self.window.append(self.features[demos].mean(axis=0))
        self.seen += demos.size

    def current(self) -> np.ndarray:
        """``(F,)``: the mean over the window (the whole training set's mean before any batch)."""
        if not self.window:
            return self.features.mean(axis=0)
        return np.mean(np.array(self.window), axis=0)

    def state_dict(self) -> dict:
        """``{"window": [...], "seen": int}``."""
        return {"window": [w.tolist() for w in self.window], "seen": self.seen}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.window = deque((np.asarray(w) for w in state["window"]), maxlen=self.window.maxlen)
        self.seen = int(state["seen"])


def _mean_return(device: str) -> Callable[[Any, Any, Any], float]:
    def evaluate(policy: Any, split: Any, batch: Any) -> float:
        from curteach_teaching.experiments.nav.evaluation import evaluate_split

        return evaluate_split(policy, split, device=device, batch=batch).mean_return

    return evaluate


class BestModel:
    """Model selection on the validation split: a model becomes the best if its validation return is ``>=`` the best
    so far; the test split is evaluated only then.

    Args:
        policy: the model being trained.
        val, test: the validation and test splits.
        device: where the rollouts run.
        evaluate: ``(policy, split, task_batch) -> mean return``; default greedy rollouts
            (:func:`~curteach_teaching.experiments.nav.evaluation.evaluate_split`).

    Attributes:
        best_val, best_test: the best validation return (``-inf`` before any) and that model's test return (NaN).
        best_state: the best model's ``state_dict`` on the CPU (``None`` before any).
    """

    def __init__(self, policy: Any, val: Any, test: Any, *, device: str = "cpu",
                 evaluate: Callable[[Any, Any, Any], float] | None = None):
        from curteach_envs.navigation import TaskBatch

        self.policy, self.val, self.test = policy, val, test
        self.evaluate = evaluate if evaluate is not None else _mean_return(device)
        self.val_batch = TaskBatch.from_split(val)
        self.test_batch = TaskBatch.from_split(test)
        self.best_val = -np.inf
        self.best_test = np.nan
        self.best_state: dict | None = None

    def consider(self, step: int) -> float:
        """Evaluate the current model on validation, keep it if it is the best; its validation return.

        Raises:
            LearnerDiverged: the model's logits are not finite (named with ``step``).
        """
        from curteach_teaching.experiments.nav.evaluation import NonFiniteLogits
        from curteach_teaching.learners.divergence import LearnerDiverged

        try:
            val = self.evaluate(self.policy, self.val, self.val_batch)
        except NonFiniteLogits as error:
            raise LearnerDiverged(f"step {step}: {error}") from None
        if val >= self.best_val:
            self.best_val = val
            self.best_state = {k: v.detach().to("cpu", copy=True) for k, v in self.policy.state_dict().items()}
            self.best_test = self.evaluate(self.policy, self.test, self.test_batch)
        return val

    def state_dict(self) -> dict:
        """``{"val", "test", "state"}``."""
        return {"val": self.best_val, "test": self.best_test, "state": self.best_state}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.best_val, self.best_test, self.best_state = state["val"], state["test"], state["state"]


class RunCheckpoint:
    """One run's checkpoint file (torch, ``weights_only``), written atomically.

    Args:
        path: the file.
        state_format: the format tag a state must carry to be restored.
    """

    def __init__(self, path: str | Path, state_format: str):
        self.path = Path(path)
        self.state_format = state_format

    def save(self, state: dict) -> None:
        """Write ``{"format": state_format, **state}``."""
        import torch as th

        buffer = io.BytesIO()
        th.save({"format": self.state_format, **state}, buffer)
        atomic_write(self.path, lambda stream: stream.write(buffer.getvalue()), binary=True)

    def restore(self, apply: Callable[[dict], None]) -> dict | None:
        """Load the file if it exists and give its state to ``apply``; the state, or ``None`` without a file.

        Raises:
            ValueError: a damaged or foreign file, or a state ``apply`` cannot take (the file is kept for
                inspection; the message says to delete it).
        """
        import torch as th

        if not self.path.exists():
            return None
        try:
            state = th.load(self.path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or state.get("format") != self.state_format:
                raise ValueError("not a navigation checkpoint")
            apply(state)
        except Exception as error:  # any damage: name the file, keep it for inspection
            raise ValueError(
                f"checkpoint {str(self.path)!r} cannot be used ({type(error).__name__}: "
                f"{(str(error).strip().splitlines() or [''])[0]}); delete it to restart that run from scratch"
            ) from error
        return state

    def remove(self) -> None:
        """Delete the file (a finished run needs it no more)."""
        self.path.unlink(missing_ok=True)
