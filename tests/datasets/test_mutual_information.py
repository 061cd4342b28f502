"""KSG's mutual information estimator (datasets.mutual_information): the Gaussian closed form, a hand count of the
neighbours, the per-sample shares, the duplicate rule, invariance to the samples' order, and the trees' answers
equal to an all-pairs count."""

import math

import numpy as np
import pytest
from scipy.special import digamma

from curteach_teaching.datasets.mutual_information import MARGINAL_LEAF, ksg_mutual_information


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_a_bivariate_gaussian_matches_its_closed_form(rho):
    rng = np.random.default_rng(7)
    samples = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=2000)
    estimate = ksg_mutual_information(samples[:, 0], samples[:, 1], k=3).total
    # Measured over 20 seeds at n = 2000, k = 3: bias under 0.003 nats, standard deviation 0.015 to 0.019, largest
    # error 0.043. 0.06 is three standard deviations, and far below the gaps between the values (0, 0.144, 0.830).
    assert estimate == pytest.approx(-0.5 * math.log(1.0 - rho**2), abs=0.06)


def test_the_contributions_average_to_the_estimate():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 3))
    y = x[:, :2] ** 2 + 0.5 * rng.normal(size=(500, 2))
    estimate = ksg_mutual_information(x, y, k=4)
    assert estimate.contributions.shape == (500,)
    assert estimate.total == pytest.approx(estimate.contributions.mean(), abs=1e-12)
    assert estimate.total > 0.2  # y depends on x


def test_five_points_counted_by_hand():
    # k = 1. Joint max-norm distances to the nearest other point: 2 (point 0 to 1), 2 (1 to 0 and to 2: a tie),
    # 2 (2 to 1), 4 (3 to 2 and to 4: a tie), 4 (4 to 3).
    # Strictly within eps in x: point 0 has x=1 (1 < 2); point 1 has x=0 (x=3 is at 2, not counted); point 2 none
    # (x=1 at 2); point 3 has x=3 (x=10 at 4, not counted); point 4 none (x=6 at 4).
    # In y: point 0 none (y=2 at 2); point 1 has y=3; point 2 has y=2; point 3 has y=7.5 (y=3 at 4, not counted);
    # point 4 has y=7.
    x = np.array([0.0, 1.0, 3.0, 6.0, 10.0])
    y = np.array([0.0, 2.0, 3.0, 7.0, 7.5])
    estimate = ksg_mutual_information(x, y, k=1)
    assert estimate.radius.tolist() == [2.0, 2.0, 2.0, 4.0, 4.0]
    assert estimate.n_x.tolist() == [1, 1, 0, 1, 0]
    assert estimate.n_y.tolist() == [0, 1, 1, 1, 1]
    # psi(1) + psi(5) - psi(n_x + 1) - psi(n_y + 1), with psi(1) = -gamma, psi(2) = 1 - gamma and
    # psi(5) = -gamma + 1 + 1/2 + 1/3 + 1/4: 13/12 where one count is 1 and the other 0, 1/12 where both are 1.
    assert estimate.contributions == pytest.approx([13 / 12, 1 / 12, 13 / 12, 1 / 12, 13 / 12], abs=1e-12)


def test_coinciding_samples_follow_the_mixed_data_rule():
    # The first three samples coincide: their k-th (k=1) neighbour is at 0, so k becomes the 2 others equal to them
    # and the counts are of the samples at distance 0 (2 in x and in y).
    x = np.array([0.0, 0.0, 0.0, 5.0, 6.0])
    y = np.array([1.0, 1.0, 1.0, 9.0, 7.0])
    estimate = ksg_mutual_information(x, y, k=1)
    assert estimate.radius[:3].tolist() == [0.0, 0.0, 0.0]
    assert estimate.k_used.tolist() == [2, 2, 2, 1, 1]
    assert estimate.n_x[:3].tolist() == [2, 2, 2] and estimate.n_y[:3].tolist() == [2, 2, 2]
    expected = digamma(2) + digamma(5) - 2 * digamma(3)
    assert estimate.contributions[:3] == pytest.approx([expected] * 3, abs=1e-12)
    assert np.isfinite(estimate.contributions).all()


def test_the_samples_order_and_the_chunk_size_change_nothing():
    rng = np.random.default_rng(11)
    x = np.round(rng.normal(size=(400, 2)), 1)  # rounded: ties at the radius occur and must be counted the same
    y = np.round(x[:, :1] + rng.normal(size=(400, 1)), 1)
    whole = ksg_mutual_information(x, y, k=3)
    order = rng.permutation(400)
    shuffled = ksg_mutual_information(x[order], y[order], k=3, chunk=37)
    np.testing.assert_array_equal(shuffled.contributions, whole.contributions[order])
    np.testing.assert_array_equal(shuffled.n_x, whole.n_x[order])
    assert shuffled.total == pytest.approx(whole.total, abs=1e-12)


def _all_pairs(x, y, k):
    """KSG's quantities by the definition, from every pair's max-norm distances (no tree): ``(eps, n_x, n_y, k_i)``."""
    dx = np.abs(x[:, None, :] - x[None, :, :]).max(axis=2)
    dy = np.abs(y[:, None, :] - y[None, :, :]).max(axis=2)
    joint = np.maximum(dx, dy)
    others = ~np.eye(len(x), dtype=bool)
    eps = np.sort(np.where(others, joint, np.inf), axis=1)[:, k - 1]  # the k-th nearest other sample
    zero = eps == 0.0
    n_x = np.where(zero, ((dx <= 0) & others).sum(axis=1), ((dx < eps[:, None]) & others).sum(axis=1))
    n_y = np.where(zero, ((dy <= 0) & others).sum(axis=1), ((dy < eps[:, None]) & others).sum(axis=1))
    k_i = np.where(zero, ((joint <= 0) & others).sum(axis=1), k)
    return eps, n_x, n_y, k_i


@pytest.mark.parametrize("k", [1, 4])
def test_the_trees_count_what_every_pair_counts(k):
    # More samples than a marginal leaf holds, so the trees have inner nodes that are pruned and counted whole;
    # values on a grid of 0.25 (exact in binary), so ties at the radius occur; 30 samples coincide in groups of 5;
    # a chunk below the sample count, so the queries run in several chunks of the joint tree's order.
    rng = np.random.default_rng(5)
    n = 5 * MARGINAL_LEAF + 3
    x = np.round(4 * rng.normal(size=(n, 3))) / 4
    y = np.round(4 * (x[:, :2] + rng.normal(size=(n, 2)))) / 4
    x[:30], y[:30] = np.repeat(x[:6], 5, axis=0), np.repeat(y[:6], 5, axis=0)  # 6 samples, each 5 times
    estimate = ksg_mutual_information(x, y, k=k, chunk=97)
    eps, n_x, n_y, k_i = _all_pairs(x, y, k)
    assert (eps == 0).any() and (eps > 0).any()  # both of the rules are exercised
    np.testing.assert_array_equal(estimate.radius, eps)
    np.testing.assert_array_equal(estimate.n_x, n_x)
    np.testing.assert_array_equal(estimate.n_y, n_y)
    np.testing.assert_array_equal(estimate.k_used, k_i)
    expected = digamma(k_i) + digamma(n) - digamma(n_x + 1) - digamma(n_y + 1)
    np.testing.assert_array_equal(estimate.contributions, expected)


@pytest.mark.parametrize(("x", "y", "k", "message"), [
    (np.zeros(5), np.zeros(4), 1, "same samples"),
    (np.arange(5.0), np.arange(5.0), 5, "k must be"),
    (np.arange(5.0), np.arange(5.0), 0, "k must be"),
    (np.array([0.0, np.nan, 1.0]), np.arange(3.0), 1, "finite"),
])
def test_bad_input_is_refused(x, y, k, message):
    with pytest.raises(ValueError, match=message):
        ksg_mutual_information(x, y, k=k)
