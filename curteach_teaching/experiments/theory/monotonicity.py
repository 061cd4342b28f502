"""Theorems 1 and 3 of the paper, measured: the one-step decrease of the teaching objective for every candidate.

Both theorems are about ``Delta_t = ||theta* - theta_t||^2 - ||theta* - theta_{t+1}(xi)||^2``, the decrease of the
squared distance to the target parameter after one update ``theta_{t+1} = theta_t - eta g_t(xi)`` on a demonstration
``xi``. Expanding the square gives it exactly (:func:`one_step_decrease`):

    Delta_t(xi) = -eta^2 ||g||^2 - 2 eta <theta* - theta_t, g>,

and the theorems say that, when ``eta ||g||^2 << 2 |<theta* - theta_t, g>|`` (:func:`step_size_ratio` measures the
ratio of the two sides), it falls with the teacher's difficulty ``Psi^E(xi)`` and rises with the learner's
``Psi^L(xi)``. The proofs rest on Lemma 1 (MaxEnt-IRL: ``-<theta* - theta_t, g> = log Psi^L/Psi^E + K_t``) and Lemma
2 (CrossEnt-BC: the same without ``K_t``, to first order).

Both theorems need a realizable learner (``pi^E = pi_theta*``), so one run, from one seed, builds it as
:mod:`~curteach_teaching.experiments.theory.theorem2` does: a fresh car road (or the small random deterministic MDP),
``theta*`` from standard normal draws times ``theta_scale``, and a *linear* learner of the paper's model:

* ``"irl"``: MaxEnt-IRL with ``R_theta(s) = theta . phi(s)``; the teacher is the soft-optimal policy of ``theta*`` (the
  MDP's reward is set to ``phi . theta*``); ``g(xi) = mu^{pi_theta, s_0} - mu^xi``;
* ``"bc"``: CrossEnt-BC with ``H_theta(s, a) = theta . psi(s, a)`` (``psi``: the car BC learner's expected next-state
  features); the teacher is ``softmax_a(theta* . psi(s, a))``; ``g(xi) = sum_tau (E_{pi_theta} psi(s_tau, .) -
  psi(s_tau, a_tau))``. The car's BC expert (hard value iteration) is deterministic, which no finite ``theta*``
  reproduces: this realizable teacher replaces it.

The learner starts from its own normal draw ``theta_1`` and is taught by Agn (a uniformly random start, the start's
demonstrations: the exact occupancy for IRL, the start's pooled trajectories for BC) at ``teaching_rate``. At every
step in ``checkpoints`` the run scores two candidate sets:

* ``demonstrations``: each single trajectory of the pool (the theorems' ``xi``; Cur picks ``argmax Psi^L/Psi^E``);
* ``starts``: each start's demonstrations as the car experiments teach them (IRL: the exact occupancy; BC: its
  trajectories as one set), scored by Cur's aggregation of the pool (IRL ``mean``, BC ``geometric``).

For every candidate it computes ``log Psi^E``, ``log Psi^L``, ``-<theta* - theta, g>`` and ``||g||^2``; for every
rate in ``rates`` the decrease and the ratio follow, and :func:`candidate_statistics` reduces them to rank
correlations and Cur's percentile. The curves of a run are those statistics against the checkpoint; the raw
per-candidate values travel in ``extras["candidates"]`` for the figures.
"""

from __future__ import annotations

import numpy as np

from curteach_teaching.difficulty import aggregate, log_difficulty

__all__ = [
    "AGGREGATION",
    "LEARNERS",
    "LEVELS",
    "STATISTICS",
    "bc_gradients",
    "candidate_statistics",
    "demonstration_difficulties",
    "irl_gradients",
    "linear_softmax_log_policy",
    "one_step_decrease",
    "spearman",
    "start_difficulties",
    "step_size_ratio",
    "stored_decrease",
]

#: the learner models (the experiment's cells)
LEARNERS = ("irl", "bc")
#: the candidate sets scored at each checkpoint
LEVELS = ("demonstrations", "starts")
#: how Cur aggregates a start's pool in the car experiments (IRL original: mean of ratios; BC original: product)
AGGREGATION = {"irl": "mean", "bc": "geometric"}
#: the statistics of :func:`candidate_statistics`, in order
STATISTICS = ("spearman_E", "spearman_L", "spearman_ratio", "slope_E", "slope_L", "cur_percentile", "cur_vs_best",
              "share_inside", "share_away", "spearman_E_inside", "spearman_L_inside", "spearman_E_outside",
              "spearman_L_outside")
#: fewer candidates than this in a group (inside or outside the step-size condition) give no correlation (NaN)
MIN_GROUP = 5


def one_step_decrease(theta: np.ndarray, theta_star: np.ndarray, gradients: np.ndarray, rate: float) -> np.ndarray:
    """``||theta* - theta||^2 - ||theta* - (theta - rate g)||^2 = -rate^2 ||g||^2 - 2 rate <theta* - theta, g>``.

    Args:
        theta, theta_star: ``(d,)`` the learner's and the target parameters.
        gradients: ``(N, d)`` one gradient per candidate.
        rate: the step size ``eta``.

    Returns:
        ``(N,)`` the decrease of the squared distance each candidate's update gives (negative: the step moves away).
    """
    gradients = np.asarray(gradients, dtype=np.float64)
    return -rate**2 * np.einsum("nd,nd->n", gradients, gradients) - 2.0 * rate * (gradients @ (theta_star - theta))


def stored_decrease(progress: np.ndarray, gradient_norm2: np.ndarray, rate: float) -> np.ndarray:
    """:func:`one_step_decrease` from its two parts, ``progress = -<theta* - theta, g>`` and ``||g||^2`` (as a run
    stores them, so that a report can evaluate any rate); ``(N,)``."""
    return 2.0 * rate * np.asarray(progress) - rate**2 * np.asarray(gradient_norm2)


def step_size_ratio(theta: np.ndarray, theta_star: np.ndarray, gradients: np.ndarray, rate: float) -> np.ndarray:
    """``eta ||g||^2 / (2 |<theta* - theta, g>|)``, the two sides of the theorems' step-size condition; ``(N,)``.

    The condition ``eta ||g||^2 << 2 |<theta* - theta, g>|`` holds where the ratio is small; a zero gradient gives 0
    (the step changes nothing), a gradient orthogonal to ``theta* - theta`` gives ``inf``.
    """
    gradients = np.asarray(gradients, dtype=np.float64)
    squared = np.einsum("nd,nd->n", gradients, gradients)
    inner = np.abs(gradients @ (theta_star - theta))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(squared == 0.0, 0.0, rate * squared / (2.0 * inner))


def irl_gradients(learner, states: np.ndarray) -> np.ndarray:
    """MaxEnt-IRL gradients ``g(xi) = mu^{pi_theta, s_0} - mu^xi`` of single demonstrations.

    Args:
        learner: a linear :class:`~curteach_teaching.learners.maxent_irl.MaxEntIRLLearner`.
        states: ``(N, L)`` the demonstrations' states, ``s_0`` a start state; ``mu^xi = sum_tau gamma^tau
            phi(s_tau)`` (a demonstration that runs to the end of its episode has the expectation of the exact
            occupancy from its start).

    Returns:
        ``(N, d)``.
    """
    features, gamma = learner.features, learner.mdp.gamma
    discount = gamma ** np.arange(states.shape[-1])
    mu_demo = np.einsum("l,nld->nd", discount, features[states])
    mu_learner = learner.tasks.feature_expectations(learner.occupancy, features)  # (K, d)
    index = np.array([learner.tasks.start_index[int(s)] for s in states[:, 0]])
    return mu_learner[index] - mu_demo


def linear_softmax_log_policy(theta: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``log softmax_a(theta . psi(s, a))``, ``(S, A)``, from ``(d,)`` parameters and ``(S, A, d)`` features."""
    scores = features @ theta
    shifted = scores - scores.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def bc_gradients(theta: np.ndarray, features: np.ndarray, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """CrossEnt-BC gradients of the summed negative log-likelihood of demonstrations under a linear softmax policy:
    ``g(xi) = sum_tau (E_{a ~ pi_theta(.|s_tau)} psi(s_tau, a) - psi(s_tau, a_tau))``.

    Args:
        theta: ``(d,)``.
        features: ``(S, A, d)`` action features ``psi``.
        states, actions: ``(N, L)`` the demonstrations.

    Returns:
        ``(N, d)``.
    """
    policy = np.exp(linear_softmax_log_policy(theta, features))
    expected = np.einsum("sa,sad->sd", policy, features)  # (S, d)
    return expected[states].sum(axis=-2) - features[states, actions].sum(axis=-2)


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values)  # ties get their average rank


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (ties averaged); NaN for fewer than 2 values or a constant side."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(_ranks(x), _ranks(y))[0, 1])


def candidate_statistics(decrease, ratio, log_psi_e, log_psi_l, cur, rate: float, inside_ratio: float) -> dict:
    """Rank correlations of the one-step decrease with the difficulties, Cur's place among the candidates, and both
    inside and outside the step-size condition.

    Args:
        decrease: ``(N,)`` :func:`one_step_decrease` at ``rate``.
        ratio: ``(N,)`` :func:`step_size_ratio` at ``rate``.
        log_psi_e, log_psi_l: ``(N,)`` the teacher's and the learner's log difficulty.
        cur: the index of Cur's pick.
        rate: ``eta`` (the fitted slopes are divided by ``2 eta``; the theorems predict -1 and +1).
        inside_ratio: candidates with ``ratio <= inside_ratio`` count as inside the condition.

    Returns:
        ``spearman_E``, ``spearman_L``, ``spearman_ratio`` (with ``log Psi^L/Psi^E``), ``slope_E``, ``slope_L`` (the
        least-squares fit ``decrease / (2 eta) ~ c + a log Psi^E + b log Psi^L``), ``cur_percentile`` (share of the
        other candidates whose decrease is below Cur's, ties half), ``cur_vs_best`` (Cur's decrease over the largest),
        ``share_inside``, ``share_away`` (share with a negative decrease), and ``spearman_E_inside``,
        ``spearman_L_inside``, ``spearman_E_outside``, ``spearman_L_outside`` (NaN for fewer than
        :data:`MIN_GROUP` candidates in the group).
    """
    n = decrease.size
    log_ratio = log_psi_l - log_psi_e
    design = np.column_stack([np.ones(n), log_psi_e, log_psi_l])
    slopes = np.linalg.lstsq(design, decrease / (2.0 * rate), rcond=None)[0]
    below = (decrease < decrease[cur]).sum() + 0.5 * ((decrease == decrease[cur]).sum() - 1)
    best = decrease.max()
    inside = ratio <= inside_ratio
    stats = {
        "spearman_E": spearman(decrease, log_psi_e),
        "spearman_L": spearman(decrease, log_psi_l),
        "spearman_ratio": spearman(decrease, log_ratio),
        "slope_E": float(slopes[1]),
        "slope_L": float(slopes[2]),
        "cur_percentile": float(below / (n - 1)) if n > 1 else float("nan"),
        "cur_vs_best": float(decrease[cur] / best) if best > 0 else float("nan"),
        "share_inside": float(inside.mean()),
        "share_away": float((decrease < 0).mean()),
    }
    for name, group in (("inside", inside), ("outside", ~inside)):
        enough = group.sum() >= MIN_GROUP
        for side, values in (("E", log_psi_e), ("L", log_psi_l)):
            stats[f"spearman_{side}_{name}"] = spearman(decrease[group], values[group]) if enough else float("nan")
    return stats


def demonstration_difficulties(teacher_log_policy, learner_log_policy, states, actions) -> tuple:
    """``(log Psi^E, log Psi^L)`` of demonstrations, each ``(...)`` for ``(..., L)`` states and actions."""
    return log_difficulty(teacher_log_policy, states, actions), log_difficulty(learner_log_policy, states, actions)


def start_difficulties(log_psi_e: np.ndarray, log_psi_l: np.ndarray, aggregation: str) -> tuple:
    """A start's difficulties from its pool's ``(K, n)`` per-demonstration ones, aggregated as Cur aggregates them
    (``mean``: ``log mean_j Psi_j``; ``geometric``: ``sum_j log Psi_j``, the difficulty of the set as one
    demonstration); ``(K,)`` each."""
    return aggregate(log_psi_e, aggregation), aggregate(log_psi_l, aggregation)
