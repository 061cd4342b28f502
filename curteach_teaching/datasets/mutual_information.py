"""The Kraskov-Stoegbauer-Grassberger estimator of mutual information (KSG, Phys. Rev. E 69, 066138, 2004; their
algorithm 1), with each sample's own contribution, for plain arrays.

For ``n`` samples ``z_i = (x_i, y_i)`` and an integer ``k``, let ``eps_i`` be the max-norm distance from ``z_i`` to its
``k``-th nearest other sample in the joint space, where the max-norm of ``z`` is the largest absolute coordinate over
``x`` and ``y`` together (so the joint distance is the larger of the two marginal max-norm distances). Let ``n_x(i)``
be the number of other samples ``j`` with ``|x_i - x_j| < eps_i`` (strictly) and ``n_y(i)`` likewise in ``y``. Then

    c_i = psi(k) + psi(n) - psi(n_x(i) + 1) - psi(n_y(i) + 1)          and          I(X; Y) ~ mean_i c_i.

``c_i`` is sample ``i``'s contribution; Demonstration Information (:mod:`curteach_teaching.datasets.deminf`) averages
it over a demonstration's steps.

Ties and duplicates. ``eps_i`` is the ``k``-th smallest distance from ``z_i`` to the other samples, counted with
multiplicity, so it does not depend on which of several equidistant samples a tree returns, nor on the order of the
samples. When ``eps_i > 0`` the counts use the strict inequality, as KSG's algorithm 1 does: a sample at exactly
``eps_i`` is not counted (in particular the ``k``-th neighbour itself is not counted when its marginal distance equals
``eps_i``). When ``eps_i == 0`` (``z_i`` and at least ``k`` other samples coincide, so the data are not continuous
there) KSG's formula has no meaning (``n_x`` would be 0 while ``k`` samples sit on ``x_i``); for those samples this
module follows the mixed-data rule of Gao, Kannan, Oh and Viswanath (NeurIPS 2017): ``k`` is replaced by the number
``k_i`` of other samples equal to ``z_i`` and the marginal counts are of the other samples at distance 0 (``<= 0``),
which are at least ``k_i``, so ``c_i = psi(k_i) + psi(n) - psi(n_x(i) + 1) - psi(n_y(i) + 1)`` stays finite.

Cost: two k-d trees (``scipy.spatial.cKDTree``, ``p=inf``) for the marginals and one for the joint space, one
``k + 1``-nearest query and two counting queries per sample, done in chunks of samples so that the memory held at
once is ``O(chunk * k)`` beyond the trees, with no Python loop over samples. The counting queries dominate (on the
Meta-World mixed pool's 56,000 steps a step's action box holds about 2,600 others, and the tree checks every point
of the leaves its box's faces cut), so the trees are built for them: sliding-midpoint splits (``balanced_tree=False``)
and leaves of :data:`MARGINAL_LEAF` points for the marginals (fewer, larger leaves: fewer nodes visited per box), and
:data:`JOINT_LEAF` for the joint space; and the samples are queried in the joint tree's order, so that consecutive
queries walk the same nodes (cache locality). None of this changes a number: a k-d tree's nearest-neighbour
distances and its counts within a radius are exact whatever its leaves and splits (a node is pruned or counted whole
only when its bounding box, which holds its points, lies wholly outside or inside the ball, and a floating-point
distance is monotone in each coordinate), and each sample's queries do not depend on the order they are asked in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma

__all__ = ["KSGEstimate", "ksg_mutual_information"]

#: Samples queried at once: bounds the neighbour arrays held at once (a few MB) at any pool size.
DEFAULT_CHUNK = 8192
#: Points per leaf of the joint space's tree (its ``k + 1``-nearest queries; scipy's default is 16).
JOINT_LEAF = 32
#: Points per leaf of the marginals' trees (the counting queries, whose boxes hold hundreds to thousands of points).
MARGINAL_LEAF = 128


@dataclass(frozen=True)
class KSGEstimate:
    """A KSG estimate of ``I(X; Y)`` in nats over ``n`` samples.

    Attributes:
        total: the estimate, the mean of ``contributions``.
        contributions: ``(n,)`` float64, each sample's ``psi(k_i) + psi(n) - psi(n_x + 1) - psi(n_y + 1)``.
        radius: ``(n,)`` float64, ``eps_i``: the max-norm distance to the ``k``-th nearest other sample in the joint
            space.
        n_x, n_y: ``(n,)`` int64, the other samples strictly within ``eps_i`` in ``x`` and in ``y`` (at distance 0
            where ``eps_i == 0``).
        k_used: ``(n,)`` int64, ``k``, or the number of other samples equal to ``z_i`` where ``eps_i == 0``.
    """

    total: float
    contributions: np.ndarray
    radius: np.ndarray
    n_x: np.ndarray
    n_y: np.ndarray
    k_used: np.ndarray


def _as_samples(name: str, values: np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise ValueError(f"{name} must be (n, d) or (n,); got shape {np.shape(values)}")
    if not np.isfinite(array).all():
        raise ValueError(f"every value of {name} must be finite")
    return array


def _count_within(tree: cKDTree, points: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """``(m,)`` int64: the tree's points at max-norm distance ``<= radius[i]`` of ``points[i]``, the point itself
    included when it is in the tree. ``points`` ``(m, d)``, ``radius`` ``(m,)``."""
    return np.asarray(tree.query_ball_point(points, radius, p=np.inf, return_length=True), dtype=np.int64)


def ksg_mutual_information(x: np.ndarray, y: np.ndarray, k: int = 3, *,
                           chunk: int = DEFAULT_CHUNK) -> KSGEstimate:
    """KSG's estimate (algorithm 1, max-norm) of the mutual information of ``x`` and ``y`` with each sample's share.

    Args:
        x: ``(n, dx)`` (or ``(n,)``) samples of ``X``, finite.
        y: ``(n, dy)`` (or ``(n,)``) samples of ``Y``, paired with ``x`` row by row, finite.
        k: the neighbour rank, ``1 <= k < n``. Small ``k`` has less bias and more variance (KSG suggest 2 to 4).
        chunk: samples queried at once (memory only; the result does not depend on it).

    Returns:
        :class:`KSGEstimate`; its ``total`` is in nats and may be slightly negative for independent samples.

    Raises:
        ValueError: mismatched lengths, a non-finite value, or ``k`` outside ``[1, n)``.
    """
    x, y = _as_samples("x", x), _as_samples("y", y)
    n = x.shape[0]
    if y.shape[0] != n:
        raise ValueError(f"x and y must hold the same samples; got {n} and {y.shape[0]} rows")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < n:
        raise ValueError(f"k must be an integer in [1, n) = [1, {n}); got {k!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer; got {chunk!r}")
    k = int(k)
    joint = np.concatenate([x, y], axis=1)
    joint_tree = cKDTree(joint, leafsize=JOINT_LEAF, balanced_tree=False)
    x_tree = cKDTree(x, leafsize=MARGINAL_LEAF, balanced_tree=False)
    y_tree = cKDTree(y, leafsize=MARGINAL_LEAF, balanced_tree=False)

    radius = np.empty(n, dtype=np.float64)
    n_x = np.empty(n, dtype=np.int64)
    n_y = np.empty(n, dtype=np.int64)
    k_used = np.full(n, k, dtype=np.int64)
    order = joint_tree.indices  # the samples in the joint tree's leaf order: neighbours in space queried together
    for start in range(0, n, chunk):  # a loop over chunks of samples, each chunk vectorised
        rows = order[start:start + chunk]
        # The k + 1 nearest, the sample itself (distance 0) among them: column k is the k-th nearest other sample's
        # distance, whichever of several tied samples the tree returned.
        distances, _ = joint_tree.query(joint[rows], k=k + 1, p=np.inf)
        eps = distances[:, k]
        radius[rows] = eps
        # query_ball_point counts distances <= r; the largest float below eps makes it the strict count (< eps)
        # for the same floating-point distances, and the sample itself (distance 0 < eps) is taken off.
        below = np.nextafter(eps, 0.0)
        coincide = eps == 0.0
        below[coincide] = 0.0  # Gao et al.'s rule: the samples at distance 0 (<= 0), the sample itself taken off
        n_x[rows] = _count_within(x_tree, x[rows], below) - 1
        n_y[rows] = _count_within(y_tree, y[rows], below) - 1
        if coincide.any():
            where = rows[coincide]
            k_used[where] = _count_within(joint_tree, joint[where], np.zeros(where.size)) - 1
    contributions = digamma(k_used) + digamma(n) - digamma(n_x + 1) - digamma(n_y + 1)
    return KSGEstimate(float(contributions.mean()), contributions, radius, n_x, n_y, k_used)
