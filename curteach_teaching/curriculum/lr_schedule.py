"""The original navigation code's learning-rate schedule, as a curriculum callback (x0.5 every 5,000 steps)."""

from __future__ import annotations

from typing import Any

from curteach_envs._util import check_int, check_positive
from curteach_teaching.curriculum.callbacks import CurriculumCallback

__all__ = ["StepLRSchedule"]


class StepLRSchedule(CurriculumCallback):
    """Step decay of an optimizer's learning rate by global optimizer step: after step ``s`` every param group's
    LR is ``base_lr * gamma ** (s // period)`` (the original navigation code: ``gamma = 0.5`` every 5,000 batches;
    the paper says 500).

    Use it as a callback of a curriculum (its :attr:`every` is ``period``): ``callbacks=[StepLRSchedule(opt, 5000)]``.
    The LR is a function of the step, so calling it at other steps too (e.g. every 100, as the original steps its
    scheduler) changes nothing. It is resumable: :meth:`state_dict` holds the base LRs (the optimizer's LRs when the
    schedule was made), which a resumed run must not take from an optimizer whose LR has already decayed.

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
        """The callback's period, ``period``."""
        return self.period

    def on_step(self, step: int) -> None:
        """Set the optimizer's LRs for the steps after ``step``."""
        self(step)

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
            raise ValueError(f"not a StepLRSchedule state: {state!r}")
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

