"""Tabular environments from elsewhere: Gymnasium's toy text, a seals model, and an MDP built by hand.

Run it as ``python examples/plugins/environments.py``.
"""

import gymnasium as gym
import numpy as np
import seals  # noqa: F401  (registers the seals/ environments)

from curteach_envs import TabularMDP
from curteach_envs.gymnasium_ids import registered_id  # Gymnasium 1.x renamed CliffWalking-v0 and Taxi-v3
from curteach_teaching.planning import hard_value_iteration

# Gymnasium: any environment whose unwrapped has a transition table P. A terminating transition goes to one added
# sink state (the last), so S = 64 cells + 1 on the 8x8 lake; features default to one-hot (S, 64).
lake = TabularMDP.from_gymnasium(gym.make("FrozenLake-v1", map_name="8x8"), gamma=0.95)
print(f"FrozenLake 8x8: {lake.n_states} states, {lake.n_actions} actions, features {lake.features.shape}, "
      f"reward {lake.reward.shape}, horizon {lake.horizon}")  # the goal's reward is paid on entering it: (S, A)

# Your own state features: (S, d) for the environment's S states (the sink's zero row is added).
rows, cols = np.divmod(np.arange(64), 8)
coordinates = np.stack([rows / 7, cols / 7, np.ones(64)], axis=1)  # (64, 3)
lake_xy = TabularMDP.from_gymnasium(gym.make("FrozenLake-v1", map_name="8x8"), gamma=0.95, features=coordinates)
print("own features:", lake_xy.features.shape)

cliff = TabularMDP.from_gymnasium(gym.make(registered_id("CliffWalking-v0")), gamma=0.9)  # -v1 on Gymnasium 1.x
print(f"CliffWalking: {cliff.n_states} states; the expert's value at the start "
      f"{hard_value_iteration(cliff).values[36]:.3f}")  # 13 steps of -1 at gamma 0.9

# seals: a tabular model's transition and reward matrices, horizon and initial distribution.
world = TabularMDP.from_seals(gym.make("seals/CliffWorld7x4-v0"), gamma=0.99)
print(f"seals CliffWorld7x4: {world.n_states} states, horizon {world.horizon}")

# By hand: a 3-state chain. transitions (S * A, S), row s * A + a is P(. | s, a); state 2 is absorbing (the end).
right, stay = 0, 1
transitions = np.zeros((3 * 2, 3))
for s in range(3):
    transitions[s * 2 + right, min(s + 1, 2)] = 1.0
    transitions[s * 2 + stay, s] = 1.0
transitions[2 * 2 + right] = transitions[2 * 2 + stay] = [0.0, 0.0, 1.0]
chain = TabularMDP(transitions=transitions, reward=[0.0, 1.0, 0.0], features=np.eye(3)[:, :2],
                   initial_state_dist=[1.0, 0.0, 0.0], gamma=0.9, horizon=10, action_names=("right", "stay"))
print("chain: optimal values", np.round(hard_value_iteration(chain).values, 3).tolist())

# Taxi's reward depends on the action (pick-up, drop-off): it is kept as (S, A); every planner and teacher takes it,
# except BBox, which scores starts by a state reward.
taxi = TabularMDP.from_gymnasium(gym.make(registered_id("Taxi-v3")), gamma=0.9)  # Taxi-v4 from Gymnasium 1.3
print(f"Taxi: {taxi.n_states} states, reward {taxi.reward.shape}")

# What cannot be exported says so.
try:
    TabularMDP.from_gymnasium(gym.make("CartPole-v1"))
except ValueError as error:
    print("ValueError:", error)
