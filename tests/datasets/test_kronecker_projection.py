"""The Kronecker-factored projection against closed forms: its sizes by hand, its features equal to the dense
projection by the Kronecker matrix, and inner products kept in expectation with the closed-form variance."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from curteach_teaching.datasets.kronecker_projection import (  # noqa: E402
    KroneckerProjection,
    factor_side,
    total_size,
)
from curteach_teaching.datasets.projection import inner_product_variance  # noqa: E402


def test_the_sizes_by_hand():
    shapes = [(8, 6), (3, 9)]
    # r = 6: 6 * 6 + 3 * 6 + min(3, 36) = 57; r = 7: 7 * 6 + 3 * 7 + 3 = 66 > 64
    assert total_size(shapes, 3, 6) == 57 and total_size(shapes, 3, 7) == 66
    assert factor_side(shapes, 3, 64) == 6 and factor_side(shapes, 3, 57) == 6 and factor_side(shapes, 3, 56) == 5
    assert factor_side(shapes, 0, 1) == 1  # one number per block at least: 1 + 1 > 1, still side 1
    projection = KroneckerProjection({"a": (8, 6), "b": (3, 9)}, 3, 64, seed=0)
    assert projection.side == 6 and projection.dim == 57
    out, inp = projection.factors("b")
    np.testing.assert_array_equal(out.numpy(), np.eye(3))  # d_out 3 <= 6: kept whole
    assert inp.shape == (6, 9) and set(np.unique(inp.numpy() * np.sqrt(6)).tolist()) <= {-1.0, 1.0}
    np.testing.assert_array_equal(projection.rest_matrix().numpy(), np.eye(3))


def test_the_factored_features_are_the_dense_projection_by_the_kronecker_matrix():
    rng = np.random.default_rng(0)
    projection = KroneckerProjection({"layer": (5, 4), "other": (2, 3)}, 7, 12, seed=3)
    assert projection.side == 2  # 2 * 2 + 2 * 2 + 4 = 12
    b = 6
    # two calls of "layer" per sample (as the diffusion loss runs its denoiser once per noise pair), one of "other"
    deltas, inputs = rng.normal(size=(b, 2, 5)), rng.normal(size=(b, 2, 4))
    deltas2, inputs2 = rng.normal(size=(b, 1, 2)), rng.normal(size=(b, 1, 3))
    rest = rng.normal(size=(b, 7))
    captured = {"layer": [(torch.as_tensor(inputs[:, :1]), torch.as_tensor(deltas[:, :1])),
                          (torch.as_tensor(inputs[:, 1:]), torch.as_tensor(deltas[:, 1:]))],
                "other": [(torch.as_tensor(inputs2), torch.as_tensor(deltas2))]}
    got = projection.features(captured, torch.as_tensor(rest)).numpy()
    gradient = np.einsum("bno,bni->boi", deltas, inputs)  # (b, 5, 4): the summed outer products
    gradient2 = np.einsum("bno,bni->boi", deltas2, inputs2)
    kron = np.kron(*(f.numpy() for f in projection.factors("layer")))  # (2 * 2, 5 * 4)
    kron2 = np.kron(*(f.numpy() for f in projection.factors("other")))
    expected = np.concatenate([gradient.reshape(b, -1) @ kron.T, gradient2.reshape(b, -1) @ kron2.T,
                               rest @ projection.rest_matrix().numpy().T], axis=1)
    assert got.shape == (b, 12)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    full = projection.project({"layer": gradient, "other": gradient2}, rest).numpy()
    np.testing.assert_allclose(full, expected, rtol=1e-12, atol=1e-12)
    # the seed alone decides the factors
    again = KroneckerProjection({"layer": (5, 4), "other": (2, 3)}, 7, 12, seed=3)
    np.testing.assert_array_equal(again.features(captured, torch.as_tensor(rest)).numpy(), got)
    assert not np.allclose(KroneckerProjection({"layer": (5, 4), "other": (2, 3)}, 7, 12, seed=4).features(
        captured, torch.as_tensor(rest)).numpy(), got)


def test_inner_products_of_outer_products_are_kept_in_expectation():
    """For ``G = u v^T`` and ``H = w z^T`` the projected inner product is ``X Y`` with ``X = (P u) . (P w)`` and
    ``Y = (Q v) . (Q z)`` independent unbiased estimates of ``u . w`` and ``v . z``, of the closed-form variances
    ``s_X, s_Y`` (:func:`inner_product_variance`), so ``E[X Y] = (u . w)(v . z) = G . H`` and
    ``Var(X Y) = (s_X + (u . w)^2)(s_Y + (v . z)^2) - (u . w)^2 (v . z)^2``."""
    rng = np.random.default_rng(1)
    d_out, d_in, side, draws = 40, 30, 8, 400
    u, w = rng.normal(size=d_out), rng.normal(size=d_out)
    v, z = rng.normal(size=d_in), rng.normal(size=d_in)
    w, z = w + u, z + v  # correlated, so that the inner products are far from 0
    exact = (u @ w) * (v @ z)
    assert exact == pytest.approx(np.outer(u, v).ravel() @ np.outer(w, z).ravel())
    captured = {"layer": [(torch.as_tensor(np.stack([v, z])[:, None]), torch.as_tensor(np.stack([u, w])[:, None]))]}
    products = []
    for seed in range(draws):
        features = KroneckerProjection({"layer": (d_out, d_in)}, 0, side * side, seed=seed).features(captured).numpy()
        products.append(features[0] @ features[1])
    s_x, s_y = inner_product_variance(u, w, side), inner_product_variance(v, z, side)
    variance = (s_x + (u @ w) ** 2) * (s_y + (v @ z) ** 2) - exact**2
    assert abs(np.mean(products) - exact) < 4 * np.sqrt(variance / draws)
    assert np.std(products) == pytest.approx(np.sqrt(variance), rel=0.3)


def test_bad_arguments():
    with pytest.raises(ValueError, match="needs layers"):
        KroneckerProjection({}, 0, 8)
    with pytest.raises(ValueError, match="k >= 1"):
        KroneckerProjection({"a": (2, 2)}, 0, 0)
