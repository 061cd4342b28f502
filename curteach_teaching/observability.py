"""Limited observability (the paper's Section 5 "Additional results"; docs/teaching/observability.md).

The teacher does not see the learner's policy. Every ``B`` steps (at steps ``t`` with ``t % B == 0``) it probes the
learner ``k`` times in *every* state and estimates ``pi_hat^L(a|s)`` from the action counts; between probes it keeps
the old estimate. ``k = None`` (``k -> infinity``) uses the exact policy at probe time.

Zero counts would give ``pi_hat = 0`` and an infinite difficulty ratio, so counts are smoothed additively
(Laplace): ``pi_hat(a|s) = (n(a|s) + alpha) / (k + A alpha)`` with ``alpha = 0.5`` by default (the
Krichevsky-Trofimov estimator); ``alpha = 0`` is allowed and then relies on the log-probability floor of
:mod:`curteach_teaching.difficulty`.
"""

from __future__ import annotations

import numpy as np

from curteach_envs._util import check_int

__all__ = ["ProbedPolicyView", "parse_observability"]


class ProbedPolicyView:
    """A :class:`~curteach_teaching.teachers.PolicyView` of a learner through periodic probing.

    Args:
        learner: any object with ``action_log_probabilities() -> (S, A)`` (the probed learner).
        refresh_every: ``B >= 1``; the estimate is refreshed at steps ``t`` with ``t % B == 0``.
        probes_per_state: ``k >= 1`` sampled actions per state, or ``None`` for the exact policy (``k = inf``).
        rng: generator for the probes (unused when ``k`` is ``None``).
        smoothing: additive smoothing ``alpha >= 0``.

    Call :meth:`at_step` with the teaching step before the teacher reads :meth:`action_log_probabilities`.
    """

    def __init__(
        self,
        learner,
        refresh_every: int,
        probes_per_state: int | None,
        rng: np.random.Generator | None = None,
        smoothing: float = 0.5,
    ):
        check_int("refresh_every (B)", refresh_every, 1)
        if probes_per_state is not None and (
            isinstance(probes_per_state, bool)
            or not isinstance(probes_per_state, (int, np.integer))
            or probes_per_state < 1
        ):
            raise ValueError(
                f"probes_per_state (k) must be an integer >= 1 or None (infinity); got {probes_per_state!r}"
            )
        if not smoothing >= 0:
            raise ValueError(f"smoothing must be >= 0; got {smoothing!r}")
        if probes_per_state is not None and rng is None:
            raise ValueError("a finite number of probes needs an rng")
        self.learner = learner
        self.refresh_every = int(refresh_every)
        self.probes_per_state = probes_per_state
        self.rng = rng
        self.smoothing = float(smoothing)
        self._estimate: np.ndarray | None = None
        self.n_refreshes = 0

    def at_step(self, step: int) -> None:
        """Refresh the estimate if ``step % B == 0`` (or if there is none yet)."""
        if self._estimate is None or step % self.refresh_every == 0:
            self._estimate = self.estimate()
            self.n_refreshes += 1

    def estimate(self) -> np.ndarray:
        """``(S, A)`` a fresh estimate of ``log pi^L`` from ``k`` probes per state (or the exact one)."""
        log_policy = np.asarray(self.learner.action_log_probabilities(), dtype=np.float64)
        if self.probes_per_state is None:
            return log_policy.copy()
        policy = np.exp(log_policy - log_policy.max(axis=1, keepdims=True))
        policy /= policy.sum(axis=1, keepdims=True)
        counts = self.rng.multinomial(self.probes_per_state, policy)
        A = policy.shape[1]
        with np.errstate(divide="ignore"):
            return np.log(counts + self.smoothing) - np.log(self.probes_per_state + A * self.smoothing)

    def action_log_probabilities(self) -> np.ndarray:
        """``(S, A)`` the current estimate of the learner's log-policy."""
        if self._estimate is None:
            raise RuntimeError("call at_step(step) before reading the estimate")
        return self._estimate


def parse_observability(text: str) -> tuple[int, int | None]:
    """Parse ``"B:k"`` (e.g. ``"1:inf"``, ``"40:100"``) into ``(B, k)`` with ``k = None`` for infinity."""
    parts = text.strip().split(":")
    if len(parts) != 2:
        raise ValueError(f"an observability setting must look like B:k (e.g. 1:inf or 10:100); got {text!r}")
    try:
        B = int(parts[0])
        k = None if parts[1].strip().lower() in ("inf", "infinity") else int(parts[1])
    except ValueError:
        raise ValueError(f"B and k must be integers (k may be 'inf'); got {text!r}") from None
    if not 1 <= B <= 1_000_000 or (k is not None and not 1 <= k <= 10**12):
        raise ValueError(f"B must be in [1, 10^6] and k in [1, 10^12] or 'inf'; got {text!r}")
    return B, k
