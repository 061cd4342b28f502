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

__all__ = ["ProbedPolicyView", "parse_observability", "sb3_log_policy"]


class ProbedPolicyView:
    """A :class:`~curteach_teaching.teaching.teachers.PolicyView` of a learner through periodic probing.

    The probed learner may be anything that acts:

    * a tabular learner, ``action_log_probabilities() -> (S, A)``: probes are drawn from its policy;
    * a Stable-Baselines3 policy (anything with ``get_distribution(obs)``, e.g. a trained ``BC`` policy), given the
      ``observations`` of the ``S`` states: its action distribution is read once per refresh and the ``k`` probes
      drawn from it with ``rng`` (reproducible, unlike ``predict``, which draws from torch's global generator);
    * a plain callable ``act(observations) -> actions``, ``(N, *obs_shape) -> (N,)`` integer actions, given the
      ``observations`` and ``n_actions``: called once per refresh on every state repeated ``k`` times (a black
      box; its own randomness is its own, and ``k`` must be finite).

    Args:
        learner: the probed learner (see above).
        refresh_every: ``B >= 1``; the estimate is refreshed at steps ``t`` with ``t % B == 0``.
        probes_per_state: ``k >= 1`` sampled actions per state, or ``None`` for the exact policy (``k = inf``; not
            for a plain callable).
        rng: generator for the probes (unused when ``k`` is ``None`` or the learner is a plain callable).
        smoothing: additive smoothing ``alpha >= 0``.
        observations: ``(S, *obs_shape)`` what the learner sees in each state (SB3 policies and callables).
        n_actions: ``A`` (callables; an SB3 policy's comes from its action space).

    Call :meth:`at_step` with the teaching step before the teacher reads :meth:`action_log_probabilities`.
    """

    def __init__(
        self,
        learner,
        refresh_every: int,
        probes_per_state: int | None,
        rng: np.random.Generator | None = None,
        smoothing: float = 0.5,
        *,
        observations: np.ndarray | None = None,
        n_actions: int | None = None,
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
        self._kind = _learner_kind(learner)
        if self._kind != "tabular":
            if observations is None:
                raise ValueError(f"probing a {self._kind} needs observations: (S, *obs_shape), one per state")
            observations = np.asarray(observations)
            if observations.ndim < 1 or observations.shape[0] < 1:
                raise ValueError(f"observations must have shape (S, *obs_shape) with S >= 1; got {observations.shape}")
        if self._kind == "callable":
            if probes_per_state is None:
                raise ValueError("a black-box callable has no exact policy to read: give a finite k (probes_per_state)")
            check_int("n_actions", n_actions, 1)
        elif probes_per_state is not None and rng is None:
            raise ValueError("a finite number of probes needs an rng")
        self.observations = observations
        self.n_actions = n_actions
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
        if self._kind == "callable":
            counts = _probe_callable(self.learner, self.observations, self.probes_per_state, self.n_actions)
            A = self.n_actions
        else:
            if self._kind == "tabular":
                log_policy = np.asarray(self.learner.action_log_probabilities(), dtype=np.float64)
            else:
                log_policy = sb3_log_policy(self.learner, self.observations)
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


def _learner_kind(learner) -> str:
    """``"tabular"``, ``"SB3 policy"`` or ``"callable"``: how :class:`ProbedPolicyView` reads ``learner``."""
    if hasattr(learner, "action_log_probabilities"):
        return "tabular"
    if hasattr(learner, "get_distribution"):
        return "SB3 policy"
    if callable(learner):
        return "callable"
    raise ValueError(f"cannot probe a {type(learner).__name__}: give a tabular learner (action_log_probabilities), "
                     "an SB3 policy (get_distribution) or a callable observations -> actions")


def sb3_log_policy(policy, observations: np.ndarray) -> np.ndarray:
    """``(S, A)`` log-probabilities of a discrete-action SB3 policy's actions in each of the ``S`` observations."""
    import torch as th

    with th.no_grad():
        obs, _ = policy.obs_to_tensor(observations)
        distribution = policy.get_distribution(obs).distribution
        logits = getattr(distribution, "logits", None)
        if logits is None:
            raise ValueError("only SB3 policies with a categorical (discrete) action distribution can be probed")
        return th.log_softmax(logits, dim=-1).cpu().numpy().astype(np.float64)


def _probe_callable(act, observations: np.ndarray, k: int, n_actions: int) -> np.ndarray:
    """``(S, A)`` counts of ``k`` actions of ``act`` in every state, from one call on the states repeated."""
    S = observations.shape[0]
    actions = np.asarray(act(np.repeat(observations, k, axis=0)))
    if actions.shape != (S * k,) or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"the probed callable must return ({S * k},) integer actions for {S * k} observations; "
                         f"got {actions.dtype} of shape {actions.shape}")
    if actions.min() < 0 or actions.max() >= n_actions:
        raise ValueError(f"the probed callable returned actions outside [0, {n_actions - 1}]")
    states = np.repeat(np.arange(S), k)
    return np.bincount(states * n_actions + actions, minlength=S * n_actions).reshape(S, n_actions)


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
