"""CUPID's math against closed forms: per-sample gradients of a linear-Gaussian policy, the random projection's
inner products, the TRAK kernel, and the influence on a least-squares fit against the exact leave-one-out change."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from curteach_teaching.datasets.influence import (  # noqa: E402
    per_sample_gradients,
    performance_influence,
    projected_gradients,
    rollout_weights,
    target_gradient,
    trak_inverse,
)
from curteach_teaching.datasets.projection import RandomProjection, inner_product_variance  # noqa: E402
from curteach_teaching.learners.step_loss import StepLoss  # noqa: E402


def _linear_gaussian(weight: np.ndarray, bias: np.ndarray, sigma: float) -> StepLoss:
    """``pi(a | s) = N(W s + b, sigma^2 I)``; the loss ``-log pi``."""
    module = torch.nn.Linear(weight.shape[1], weight.shape[0]).double()
    with torch.no_grad():
        module.weight.copy_(torch.as_tensor(weight))
        module.bias.copy_(torch.as_tensor(bias))

    def tensors(obs, acts):
        return torch.as_tensor(obs, dtype=torch.float64), torch.as_tensor(acts, dtype=torch.float64)

    def loss(o, a):
        d = a.shape[1]
        return ((module(o) - a) ** 2).sum(dim=1) / (2 * sigma**2) + d * np.log(sigma * np.sqrt(2 * np.pi))

    return StepLoss(module, tensors, loss)


@pytest.mark.parametrize("method", ["vmap", "loop"])
def test_per_sample_gradients_of_a_linear_gaussian_policy_are_the_hand_formula(method):
    rng = np.random.default_rng(0)
    w, b, sigma = rng.normal(size=(2, 3)), rng.normal(size=2), 0.5
    obs, acts = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    grads, used = per_sample_gradients(_linear_gaussian(w, b, sigma), obs, acts, method=method)
    assert used == method and grads.shape == (5, 2 * 3 + 2)
    residual = (obs @ w.T + b - acts) / sigma**2  # d(-log pi)/d(mean) = (mean - a) / sigma^2
    expected = np.concatenate([(residual[:, :, None] * obs[:, None, :]).reshape(5, -1), residual], axis=1)
    np.testing.assert_allclose(grads.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_a_hand_computed_gradient():
    # W = [[1, 2]], b = [0], sigma = 1, s = (1, 1), a = 1: mean 3, residual 2, dW = 2 * s = (2, 2), db = 2
    grads, _ = per_sample_gradients(_linear_gaussian(np.array([[1.0, 2.0]]), np.zeros(1), 1.0),
                                    np.array([[1.0, 1.0]]), np.array([[1.0]]))
    assert grads.numpy().tolist() == [[2.0, 2.0, 2.0]]


def test_the_projection_keeps_inner_products_in_expectation():
    rng = np.random.default_rng(1)
    p, k, draws = 300, 64, 200
    x, y = rng.normal(size=p), rng.normal(size=p)
    for kind in ("rademacher", "gaussian"):
        products = []
        for seed in range(draws):
            projected = RandomProjection(p, k, seed=seed, kind=kind, block=128)(np.stack([x, y]))
            products.append(projected[0] @ projected[1])
        # the mean of `draws` independent estimates: its standard error from the closed-form variance; 4 of them
        tolerance = 4 * np.sqrt(inner_product_variance(x, y, k, kind) / draws)
        assert abs(np.mean(products) - x @ y) < tolerance
        # and the spread of one estimate is the closed form's (a loose check: within 30 % over 200 draws)
        assert np.std(products) == pytest.approx(np.sqrt(inner_product_variance(x, y, k, kind)), rel=0.3)


def test_the_projection_depends_on_the_seed_alone_not_the_batch_or_the_blocks_kept():
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(7, 1000))
    whole = RandomProjection(1000, 16, seed=3, block=300)(vectors)
    uncached = RandomProjection(1000, 16, seed=3, block=300, cache_bytes=0)
    rows = np.concatenate([uncached(vectors[i:i + 1]) for i in range(7)])
    np.testing.assert_allclose(rows, whole, rtol=1e-12, atol=1e-12)
    assert not np.allclose(RandomProjection(1000, 16, seed=4, block=300)(vectors), whole)
    signs = RandomProjection(5, 4, seed=0)._matrix_block(0).numpy() * 2  # Rademacher: +-1 / sqrt(4)
    assert set(np.unique(signs).tolist()) <= {-1.0, 1.0}


def test_the_trak_inverse_is_the_regularised_inverse_gram():
    phi = np.array([[1.0, 0.0], [1.0, 2.0], [0.0, 1.0]])
    gram = np.array([[2.0, 2.0], [2.0, 5.0]])  # phi^T phi by hand; trace 7, lambda = 0.5 * 7 / 2 = 1.75
    np.testing.assert_allclose(trak_inverse(phi, 0.5), np.linalg.inv(gram + 1.75 * np.eye(2)), rtol=1e-12)
    np.testing.assert_allclose(trak_inverse(phi, 0.0), np.linalg.inv(gram), rtol=1e-12)


def test_rollout_weights():
    weights, which = rollout_weights([True, False, True], [5.0, 1.0, 0.0])
    assert which == "success" and weights.tolist() == [1.0, -1.0, 1.0]
    weights, which = rollout_weights(None, [5.0, 1.0, 0.0])
    assert which == "centred return" and weights.tolist() == [3.0, -1.0, -2.0]
    # centred successes: 1 or 0 minus the success rate (1 of 4 here, so 0.75 and -0.25); returns unaffected
    weights, which = rollout_weights([False, True, False, False], [0.0] * 4, centred=True)
    assert which == "centred success" and weights.tolist() == [-0.25, 0.75, -0.25, -0.25]
    weights, which = rollout_weights(None, [5.0, 1.0, 0.0], centred=True)
    assert which == "centred return" and weights.tolist() == [3.0, -1.0, -2.0]


def test_target_gradient_weights_each_rollouts_steps_by_its_outcome():
    features = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])  # rollout 0: steps 0, 1; rollout 1: step 2
    g = target_gradient(features, np.array([0, 0, 1]), np.array([1.0, -1.0]))
    assert g.tolist() == [(1.0 - 2.0) / 2, (1.0 - 2.0) / 2]


def test_the_influence_on_least_squares_is_the_leave_one_out_change_to_first_order():
    """Least squares ``L(theta) = sum_i (x_i . theta - y_i)^2 / 2``, an objective linear in the weights ``J(theta) =
    c . theta``. Removing sample ``i`` moves the fit exactly by ``(H - x_i x_i^T)^{-1} g_i = H^{-1} g_i / (1 - h_i)``
    (Sherman-Morrison; ``g_i = r_i x_i`` its loss gradient, ``h_i = x_i^T H^{-1} x_i`` its leverage), so
    ``J(theta_{-i}) - J(theta) = -psi_i / (1 - h_i)`` with ``psi_i = g_i^T H^{-1} (-c)``: the influence is the
    leave-one-out change to first order, exactly up to the leverage's factor. With the exact Hessian ``H = X^T X``,
    which is TRAK's kernel of the model output's gradients ``x_i``."""
    x = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 4.0]])
    y = np.array([1.0, 2.0, 2.0, 5.0])
    c = np.array([0.0, 1.0])  # J: the fitted slope
    theta = np.linalg.lstsq(x, y, rcond=None)[0]
    residuals = x @ theta - y
    grads = residuals[:, None] * x  # (n, 2) per-sample loss gradients
    inverse = trak_inverse(x, 0.0)  # (X^T X)^{-1}
    psi = performance_influence(grads, -c, inverse)  # g = -grad J
    leverage = np.einsum("ij,jk,ik->i", x, inverse, x)
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        theta_i = np.linalg.lstsq(x[keep], y[keep], rcond=None)[0]
        np.testing.assert_allclose(c @ theta_i - c @ theta, -psi[i] / (1 - leverage[i]), rtol=1e-10, atol=1e-12)
    # by hand for the last sample (x = (1, 4), y = 5): sums n 4, x 7, x^2 21, y 10, xy 26 give the slope 34/35 and
    # the intercept 0.8; its residual 0.8 + 4 * 34/35 - 5 = -11/35; H^{-1} = [[21, -7], [-7, 4]] / 35, leverage
    # (21 - 56 + 64) / 35 = 29/35; psi = -r (x^T H^{-1})_slope = (11/35) (9/35) = 99/1225; without it the slope of
    # (0, 1), (1, 2), (2, 2) is 1/2, a change of 1/2 - 34/35 = -33/70 = -psi / (1 - 29/35)
    np.testing.assert_allclose(theta, [0.8, 34 / 35], atol=1e-12)
    assert psi[3] == pytest.approx(99 / 1225, abs=1e-12) and leverage[3] == pytest.approx(29 / 35, abs=1e-12)
    assert -psi[3] / (1 - 29 / 35) == pytest.approx(-33 / 70, abs=1e-12)


def test_projected_gradients_are_chunk_independent():
    rng = np.random.default_rng(3)
    step = _linear_gaussian(rng.normal(size=(2, 3)), rng.normal(size=2), 1.0)
    obs, acts = rng.normal(size=(11, 3)), rng.normal(size=(11, 2))
    projection = RandomProjection(8, 5, seed=0)
    whole, _ = projected_gradients(step, obs, acts, projection, chunk=11)
    pieces, _ = projected_gradients(step, obs, acts, projection, chunk=3)
    np.testing.assert_allclose(pieces, whole, rtol=1e-12, atol=1e-12)
    grads, _ = per_sample_gradients(step, obs, acts)
    np.testing.assert_allclose(whole, projection(grads.numpy()), rtol=1e-12)
