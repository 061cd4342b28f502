"""TabularMDP.from_gymnasium / from_seals: checked against a plain Bellman recursion over the environment's own
table and against rollouts of the real environment."""

import gymnasium as gym
import numpy as np
import pytest

from curteach_envs import TabularMDP
from curteach_envs.gymnasium_ids import registered_id
from curteach_teaching import expected_return, hard_value_iteration

# Gymnasium 1.x renamed these two toy-text ids (the tables are read the same way); tests/project/test_dist_envs.py runs
# this module on the newest 1.x
CLIFF_WALKING = registered_id("CliffWalking-v0")
TAXI = registered_id("Taxi-v3")


def table_values(env, gamma: float, sweeps: int = 3000) -> np.ndarray:
    """Optimal values by iterating the Bellman equation over ``P`` directly (the independent reference)."""
    P = env.unwrapped.P
    n = env.unwrapped.observation_space.n
    values = np.zeros(n)
    for _ in range(sweeps):
        new = np.array([max(sum(p * (r + (0.0 if done else gamma * values[s2])) for p, s2, r, done in P[s][a])
                            for a in P[s]) for s in range(n)])
        if np.max(np.abs(new - values)) < 1e-12:
            break
        values = new
    return values


@pytest.mark.parametrize("env_id, kwargs, gamma", [
    ("FrozenLake-v1", {"is_slippery": False}, 0.9),
    ("FrozenLake-v1", {"is_slippery": True}, 0.95),
    ("FrozenLake-v1", {"map_name": "8x8"}, 0.95),
    (CLIFF_WALKING, {}, 0.9),
    (TAXI, {}, 0.9),
])
def test_values_match_the_table(env_id, kwargs, gamma):
    env = gym.make(env_id, **kwargs)
    mdp = TabularMDP.from_gymnasium(env, gamma=gamma)
    n = env.unwrapped.observation_space.n
    assert mdp.n_states == n + 1 and mdp.n_actions == env.unwrapped.action_space.n  # one added sink
    assert mdp.absorbing[n] and mdp.features.shape == (n + 1, n) and not mdp.features[n].any()
    planned = hard_value_iteration(mdp).values[:n]
    np.testing.assert_allclose(planned, table_values(env, gamma), atol=1e-8)


def test_non_slippery_frozen_lake_closed_form():
    # 4x4, holes off the shortest path: six moves to the goal, the reward 1 is paid on the sixth -> gamma^5
    mdp = TabularMDP.from_gymnasium(gym.make("FrozenLake-v1", is_slippery=False), gamma=0.9)
    assert mdp.horizon == 100 and mdp.reward.shape == (17, 4)  # the goal's reward depends on the action taken
    assert hard_value_iteration(mdp).values[0] == pytest.approx(0.9 ** 5, abs=1e-12)
    assert mdp.initial_state_dist[0] == 1.0


def test_expected_return_matches_rollouts_of_the_real_env():
    env = gym.make("FrozenLake-v1", is_slippery=True)
    mdp = TabularMDP.from_gymnasium(env, gamma=1.0 - 1e-9, horizon=None)
    expert = hard_value_iteration(mdp.replace(gamma=0.99))
    exact = expected_return(mdp, expert.policy)
    rng = np.random.default_rng(0)
    total, episodes = 0.0, 4000
    for _episode in range(episodes):
        state, _ = env.reset(seed=int(rng.integers(2**31)))
        for _ in range(5000):  # gamma ~ 1: episodes end at a hole or the goal
            action = int(rng.choice(4, p=expert.policy[state]))
            state, reward, terminated, truncated, _ = env.unwrapped.step(action)
            total += reward
            if terminated:
                break
    sem = np.sqrt(exact * (1 - exact) / episodes)
    assert abs(total / episodes - exact) < 4 * sem


def test_state_reward_when_it_does_not_depend_on_the_action():
    env = gym.make(CLIFF_WALKING)
    mdp = TabularMDP.from_gymnasium(env, gamma=0.9)
    assert mdp.reward.shape == (49, 4)  # the cliff's -100 depends on the move
    from curteach_envs.tabular_sources import gymnasium_arrays

    class Uniform:  # a two-state chain whose reward depends on the state only
        class unwrapped:
            observation_space = gym.spaces.Discrete(2)
            action_space = gym.spaces.Discrete(2)
            P = {0: {0: [(1.0, 1, 2.0, False)], 1: [(1.0, 0, 2.0, False)]},
                 1: {0: [(1.0, 1, 0.5, True)], 1: [(1.0, 0, 0.5, False)]}}
            initial_state_distrib = np.array([1.0, 0.0])

    arrays = gymnasium_arrays(Uniform(), gamma=0.5)
    assert arrays["reward"].shape == (3,) and list(arrays["reward"]) == [2.0, 0.5, 0.0]
    mdp = TabularMDP(**arrays)
    # state 1, action 0 terminates into the sink; action 1 goes back to 0
    assert mdp.transitions[1 * 2 + 0, 2] == 1.0 and mdp.transitions[1 * 2 + 1, 0] == 1.0


def test_user_features_get_a_zero_row_for_the_sink():
    env = gym.make("FrozenLake-v1")
    coords = np.stack(np.divmod(np.arange(16), 4), axis=1).astype(float)
    mdp = TabularMDP.from_gymnasium(env, features=coords)
    assert mdp.features.shape == (17, 2) and not mdp.features[16].any()
    with pytest.raises(ValueError, match=r"features must have shape \(16, d\)"):
        TabularMDP.from_gymnasium(env, features=np.ones((3, 2)))


def test_environments_without_a_table():
    with pytest.raises(ValueError, match="CartPole-v1 has no transition table"):
        TabularMDP.from_gymnasium(gym.make("CartPole-v1"))


def test_from_seals_matches_its_matrices():
    # registers the seals/ ids; comes with the teaching extra (tests/project/test_dist_envs.py)
    pytest.importorskip("seals")

    env = gym.make("seals/CliffWorld7x4-v0")
    base = env.unwrapped
    mdp = TabularMDP.from_seals(env, gamma=0.9)
    S, A = base.transition_matrix.shape[:2]
    assert mdp.n_states == S and mdp.n_actions == A and mdp.horizon == base.horizon
    np.testing.assert_array_equal(mdp.transition_matrix, base.transition_matrix)
    np.testing.assert_array_equal(mdp.features, np.eye(S))
    # independent value iteration over seals' own (S, A, S) tensor
    reward = base.reward_matrix if base.reward_matrix.ndim == 1 else None
    values = np.zeros(S)
    for _ in range(2000):
        values = (reward[:, None] + 0.9 * base.transition_matrix @ values).max(axis=1)
    np.testing.assert_allclose(hard_value_iteration(mdp).values, values, atol=1e-8)
    with pytest.raises(ValueError, match="is not a seals tabular model"):
        TabularMDP.from_seals(gym.make("FrozenLake-v1"))
