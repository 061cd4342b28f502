"""The quadratic softmax policy (CrossEnt-BC) and the original's sequential SGD rule, against hand computations."""

import gymnasium as gym
import numpy as np
import pytest
import torch as th

from curteach_teaching.learners.bc import (
    QuadraticSoftmaxPolicy,
    action_features,
    quadratic_log_policy,
    sequential_sgd,
)
from curteach_teaching.learners.bc_car import BCCarLearner, make_bc_trainer, step_many

# one state, three actions, d = 2: psi(0, .) = [1, 0], [0, 2], [0, 0]
PSI = np.array([[[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]])


def hand_policy():
    # theta = 1: H = theta1.psi + (theta2.psi)^2 = [1 + 1, 2 + 4, 0] = [2, 6, 0]
    H = np.array([2.0, 6.0, 0.0])
    log_pi = H - np.log(np.exp(2.0) + np.exp(6.0) + 1.0)
    # grad H(b) = [psi_b, 2 (theta2.psi_b) psi_b]
    grad_H = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 2.0, 0.0, 8.0], [0.0, 0.0, 0.0, 0.0]])
    return log_pi, grad_H


def make_policy(psi=PSI, **kwargs):
    S, A, _ = psi.shape
    return QuadraticSoftmaxPolicy(gym.spaces.Discrete(S), gym.spaces.Discrete(A), action_features=psi, **kwargs)


def test_log_probs_and_gradient_at_theta_one():
    log_pi, grad_H = hand_policy()
    policy = make_policy()
    assert th.equal(policy.theta.detach(), th.ones(4, dtype=th.float64))
    _, log_prob, entropy = policy.evaluate_actions(th.tensor([0, 0, 0]), th.tensor([0, 1, 2]))
    np.testing.assert_allclose(log_prob.detach().numpy(), log_pi, rtol=0, atol=1e-14)
    pi = np.exp(log_pi)
    np.testing.assert_allclose(entropy.detach().numpy(), -(pi * log_pi).sum(), rtol=1e-13)
    for a in range(3):
        policy.zero_grad()
        _, lp, _ = policy.evaluate_actions(th.tensor([0]), th.tensor([a]))
        lp.sum().backward()
        expected = grad_H[a] - pi @ grad_H  # d log pi(a|s) / d theta
        np.testing.assert_allclose(policy.theta.grad.numpy(), expected, rtol=0, atol=1e-13)
    np.testing.assert_allclose(policy.log_policy_table()[0], log_pi, atol=1e-14)


def test_zero_features_give_the_uniform_policy_on_the_car(car_mdp):
    mdp = car_mdp.replace(gamma=0.999)
    psi = action_features(mdp)
    np.testing.assert_array_equal(psi, np.einsum("sat,td->sad", mdp.transition_matrix, mdp.features))
    last_row = np.arange(18, 800, 20)  # left cell of row 9 of every task
    zero = np.concatenate([last_row, last_row + 1, [800]])
    assert np.all(psi[zero] == 0)
    table = QuadraticSoftmaxPolicy.from_mdp(mdp).log_policy_table()
    np.testing.assert_array_equal(table[zero], np.full((zero.size, 3), -np.log(3.0)))


def test_large_scores_do_not_overflow():
    policy = make_policy(theta_init=1e4)  # scores up to 4e8: exp would overflow
    _, log_prob, entropy = policy.evaluate_actions(th.tensor([0, 0, 0, 1]), th.tensor([0, 1, 2, 0]))
    assert th.isfinite(log_prob).all() and th.isfinite(entropy).all()
    assert log_prob[1].item() == 0.0
    table = quadratic_log_policy(np.full(4, 1e4), PSI)
    assert np.all(np.isfinite(table)) and table[0, 1] == 0.0


def test_batch_update_is_lr_times_gradient_of_summed_log_likelihood():
    rng = np.random.default_rng(3)
    psi = rng.normal(size=(5, 3, 2))
    states = rng.integers(0, 5, size=100)
    actions = rng.integers(0, 3, size=100)
    policy = make_policy(psi)
    theta = np.ones(4)
    log_pi = quadratic_log_policy(theta, psi)
    pi = np.exp(log_pi)
    projections = psi @ theta[2:]  # (S, A)
    grad_H = np.concatenate([psi, 2 * projections[..., None] * psi], axis=-1)  # (S, A, 4)
    expected_grad = sum(grad_H[s, a] - pi[s] @ grad_H[s] for s, a in zip(states, actions, strict=True))
    trainer = make_bc_trainer(policy, n_pairs=100, learning_rate=0.01, rng=np.random.default_rng(0))
    trainer.set_demonstrations([{"obs": states, "acts": actions}])
    trainer.train(n_epochs=1, progress_bar=False)
    np.testing.assert_allclose(policy.theta_numpy(), theta + 0.01 * expected_grad, rtol=0, atol=1e-12)


def reference_sequential(theta, psi, states, actions, lr):
    """The per-pair rule written literally (docs/teaching/learners.md)."""
    theta = np.array(theta, dtype=float)
    d = psi.shape[-1]
    for s, a in zip(states, actions, strict=True):
        theta0 = theta.copy()
        grads = [np.concatenate([psi[s, b], 2 * (theta0[d:] @ psi[s, b]) * psi[s, b]]) for b in range(psi.shape[1])]
        H = np.array([theta0[:d] @ psi[s, b] + (theta0[d:] @ psi[s, b]) ** 2 for b in range(psi.shape[1])])
        p = np.exp(H) / np.exp(H).sum()
        theta = theta0 + lr * (grads[a] - sum(p[b] * grads[b] for b in range(psi.shape[1])))
    return theta


def test_sequential_update_follows_the_per_pair_rule():
    rng = np.random.default_rng(4)
    psi = rng.normal(size=(6, 3, 2)) * 0.5
    psi[5] = 0.0
    states = rng.integers(0, 6, size=(2, 40))
    actions = rng.integers(0, 3, size=(2, 40))
    theta = np.array([[1.0, 1.0, 1.0, 1.0], [0.5, -1.0, 2.0, 0.0]])
    single = sequential_sgd(theta[0], psi, states[0], actions[0], 0.01)
    np.testing.assert_allclose(single, reference_sequential(theta[0], psi, states[0], actions[0], 0.01), atol=1e-13)
    both = sequential_sgd(theta, psi, states, actions, 0.01)  # two learners in lockstep
    for k in range(2):
        expected = reference_sequential(theta[k], psi, states[k], actions[k], 0.01)
        np.testing.assert_allclose(both[k], expected, atol=1e-13)
    assert np.array_equal(sequential_sgd(theta[0], psi, [5, 5], [0, 1]), theta[0])  # psi = 0: no change


def test_policy_trains_in_bc_and_predicts(car_mdp):
    from curteach_teaching.demonstrations import sample_demonstrations
    from curteach_teaching.planning import hard_value_iteration

    mdp = car_mdp.replace(gamma=0.999)
    pool = sample_demonstrations(mdp, hard_value_iteration(mdp).policy, np.random.default_rng(0))
    policy = QuadraticSoftmaxPolicy.from_mdp(mdp)
    trainer = make_bc_trainer(policy, n_pairs=100, learning_rate=0.01, rng=np.random.default_rng(0))
    before = policy.log_policy_table()[pool.states[9], pool.actions[9]].sum()
    trainer.set_demonstrations(pool.trajectories(9))  # imitation's own loader path
    trainer.train(n_epochs=3, progress_bar=False)
    after = policy.log_policy_table()[pool.states[9], pool.actions[9]].sum()
    assert after > before
    action, _ = policy.predict(np.array([0, 20, 40]), deterministic=True)
    assert action.shape == (3,) and set(action.tolist()) <= {0, 1, 2}
    one_hot = np.eye(mdp.n_states)[[0, 20]]
    np.testing.assert_allclose(
        policy.log_policy(th.as_tensor(one_hot)).detach().numpy(), policy.log_policy_table()[[0, 20]], atol=1e-14
    )


def test_pickle_round_trip():
    # (SB3 2.2's policy.load uses torch.load's weights-only default of torch >= 2.6 and fails for every SB3 policy)
    import pickle

    policy = make_policy()
    policy.set_theta(np.array([0.5, -1.0, 2.0, 3.0]))
    loaded = pickle.loads(pickle.dumps(policy))
    np.testing.assert_array_equal(loaded.theta_numpy(), policy.theta_numpy())
    np.testing.assert_array_equal(loaded.log_policy_table(), policy.log_policy_table())


def test_bad_input():
    with pytest.raises(ValueError, match="observation_space"):
        QuadraticSoftmaxPolicy(gym.spaces.Discrete(3), gym.spaces.Discrete(3), action_features=PSI)
    with pytest.raises(ValueError, match="action_space"):
        QuadraticSoftmaxPolicy(gym.spaces.Discrete(2), gym.spaces.Discrete(4), action_features=PSI)
    with pytest.raises(ValueError, match="shape"):
        QuadraticSoftmaxPolicy(gym.spaces.Discrete(2), gym.spaces.Discrete(3), action_features=PSI[0])
    policy = make_policy()
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        policy.evaluate_actions(th.tensor([0]), th.tensor([3]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        policy.evaluate_actions(th.tensor([2]), th.tensor([0]))
    with pytest.raises(ValueError, match="actions must lie"):
        sequential_sgd(np.ones(4), PSI, [0], [3])
    with pytest.raises(ValueError, match="states must lie"):
        sequential_sgd(np.ones(4), PSI, [-1], [0])
    with pytest.raises(ValueError, match="theta"):
        sequential_sgd(np.ones(3), PSI, [0], [0])


def test_car_learner_home_and_old_import_paths():
    from curteach_teaching import learners
    from curteach_teaching.experiments.car import bc as car_bc

    assert car_bc.BCCarLearner is learners.BCCarLearner is BCCarLearner
    assert car_bc.make_bc_trainer is learners.make_bc_trainer is make_bc_trainer
    assert learners.step_many is step_many


def test_step_many_equals_stepping_each_learner(car_mdp):
    states = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])
    actions = np.array([[0, 1, 2, 0], [1, 1, 1, 1], [2, 0, 1, 2]])
    updates = ["sequential", "batch", "sequential"]

    def learners():
        return [BCCarLearner(car_mdp, update=u, learning_rate=0.05, n_pairs=4, rng=np.random.default_rng(i))
                for i, u in enumerate(updates)]

    together, alone = learners(), learners()
    step_many(together, states, actions)
    for i, learner in enumerate(alone):
        learner.train_sets(states[i : i + 1], actions[i : i + 1])
    for a, b in zip(together, alone, strict=True):
        assert np.array_equal(a.theta, b.theta)
    with pytest.raises(ValueError, match="update must be one of"):
        BCCarLearner(car_mdp, update="adam", learning_rate=0.01, n_pairs=4, rng=np.random.default_rng(0))
