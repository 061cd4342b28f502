"""TabularMDP: validation, derived views and the seals conversion."""

import numpy as np
import pytest
import scipy.sparse as sp

from curteach_envs import TabularMDP


def chain_mdp(n=4, gamma=0.9):
    """A deterministic chain 0 -> 1 -> ... -> n-1 (absorbing), 2 actions that both move forward."""
    S, A = n, 2
    T = np.zeros((S * A, S))
    for s in range(S):
        for a in range(A):
            T[s * A + a, min(s + 1, S - 1)] = 1.0
    init = np.zeros(S)
    init[0] = 1
    return TabularMDP(transitions=T, reward=np.arange(S, dtype=float) * (np.arange(S) < S - 1),
                      features=np.eye(S), initial_state_dist=init, gamma=gamma, horizon=n - 1)


def test_derived_views():
    mdp = chain_mdp()
    assert (mdp.n_states, mdp.n_actions, mdp.n_features) == (4, 2, 4)
    assert sp.isspmatrix_csr(mdp.transitions)
    assert mdp.transition_matrix.shape == (4, 2, 4)
    np.testing.assert_array_equal(mdp.transition_matrix.reshape(8, 4), mdp.transitions.toarray())
    np.testing.assert_array_equal(mdp.absorbing, [False, False, False, True])
    assert mdp.depth == 4
    np.testing.assert_array_equal(mdp.state_levels, [3, 2, 1, 0])
    np.testing.assert_array_equal(mdp.adjacency.toarray(), np.eye(4, k=1))
    assert mdp.live_transitions[6:].nnz == 0  # rows of the absorbing state are cut
    assert mdp.reward_sa.shape == (4, 2)
    np.testing.assert_array_equal(mdp.start_states, [0])
    assert mdp.feature_names == ("f0", "f1", "f2", "f3")
    assert mdp.action_names == ("a0", "a1")


def test_arrays_are_read_only():
    mdp = chain_mdp()
    with pytest.raises(ValueError):
        mdp.reward[0] = 5.0
    with pytest.raises(ValueError):
        mdp.transitions.data[0] = 0.5


def test_cyclic_graph_has_no_depth():
    T = np.array([[0, 1.0], [0, 1.0], [1.0, 0], [0, 1.0]])  # state 1 can go back to 0
    mdp = TabularMDP(transitions=T, reward=np.zeros(2), features=np.zeros((2, 1)),
                     initial_state_dist=[1.0, 0.0], gamma=0.5, horizon=None)
    assert mdp.depth is None and mdp.state_levels is None
    assert not mdp.absorbing.any()


def test_replace_revalidates():
    mdp = chain_mdp()
    assert mdp.replace(gamma=1.0).gamma == 1.0
    with pytest.raises(ValueError, match="gamma"):
        mdp.replace(gamma=1.5)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(transitions=np.ones((7, 4)) / 4), r"\(S \* A, S\)"),
        (dict(transitions=np.full((8, 4), 0.5)), r"row 0 \(state 0, action 0\) sums to 2"),
        (dict(transitions=-np.eye(8, 4)), "probabilities >= 0"),
        (dict(reward=np.zeros(5)), r"reward must have shape \(4,\) or \(4, 2\)"),
        (dict(reward=np.array([0, 0, np.nan, 0])), "reward must be finite"),
        (dict(features=np.zeros((3, 2))), r"features must have shape \(4, d\)"),
        (dict(feature_names=("a",)), "feature_names must have 4 entries"),
        (dict(action_names=("a",)), "action_names must have 2 entries"),
        (dict(initial_state_dist=np.full(4, 0.5)), "sum to 1"),
        (dict(initial_state_dist=np.ones(3) / 3), r"initial_state_dist must have shape \(4,\)"),
        (dict(gamma=-0.1), r"gamma must be in \[0, 1\]"),
        (dict(horizon=0), "horizon must be a positive integer"),
        (dict(start_states=np.array([0, 7])), r"distinct states in \[0, 3\]"),
        (dict(start_states=np.array([0, 0])), "distinct"),
        (dict(task_of_state=np.zeros(3, dtype=int)), r"task_of_state must be an integer array of shape \(4,\)"),
    ],
)
def test_bad_arrays_raise_value_error(change, message):
    mdp = chain_mdp()
    with pytest.raises(ValueError, match=message):
        mdp.replace(**change)


def test_to_seals(car_mdp):
    # seals comes with the teaching extra; the environments' own tests also run without it
    # (tests/project/test_dist_envs.py)
    TabularModelPOMDP = pytest.importorskip("seals.base_envs").TabularModelPOMDP

    env = car_mdp.to_seals()
    assert isinstance(env, TabularModelPOMDP)
    assert env.transition_matrix.shape == (801, 3, 801)
    assert env.horizon == 10
    assert env.observation_matrix.shape == (801, 8)
    assert car_mdp.to_seals(observation="onehot").observation_matrix.shape == (801, 801)
    with pytest.raises(ValueError, match="observation"):
        car_mdp.to_seals(observation="pixels")
    with pytest.raises(ValueError, match="finite horizon"):
        car_mdp.replace(horizon=None).to_seals()


def test_state_indicator(car_mdp):
    one_hot = car_mdp.state_indicator([0, 20])
    assert one_hot.shape == (2, 801) and one_hot[0, 0] == 1 and one_hot[1, 20] == 1 and one_hot.sum() == 2
    with pytest.raises(ValueError):
        car_mdp.state_indicator([801])
