"""Speed of the planners on the car MDP (801 states, 3 actions). Prints figures; asserts nothing.

Run: .venv/bin/python benchmarks/planning.py
"""

from __future__ import annotations

import time

import numpy as np

from curteach_envs import CarTeachEnv
from curteach_teaching.planning import hard_value_iteration, occupancy, soft_value_iteration


def best_of(fn, repeats: int = 200, rounds: int = 5) -> float:
    """Best mean seconds per call over ``rounds`` rounds of ``repeats`` calls (robust to a noisy shared machine)."""
    best = np.inf
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best


def main() -> None:
    env = CarTeachEnv(layout_seed=0)
    mdp = env.tabular()
    _ = mdp.depth, mdp.live_transitions  # built once per MDP, not per call
    rng = np.random.default_rng(0)
    theta = rng.normal(size=16)
    reward = mdp.features @ theta[:8] + (mdp.features @ theta[8:]) ** 2
    starts = mdp.state_indicator(mdp.start_states)
    expert = hard_value_iteration(mdp).policy

    def soft_plus_occupancy():
        policy = soft_value_iteration(mdp, reward).policy
        occupancy(mdp, policy)

    rows = [
        ("hard value iteration", lambda: hard_value_iteration(mdp)),
        ("soft value iteration", lambda: soft_value_iteration(mdp, reward)),
        ("soft value iteration + one occupancy", soft_plus_occupancy),
        ("occupancy from the 40 start states (40 x 801)", lambda: occupancy(mdp, expert, starts)),
    ]
    print(f"CarTeach-v0 MDP: {mdp.n_states} states, {mdp.n_actions} actions, depth {mdp.depth} "
          f"(exact in {mdp.depth} sweeps)")
    for name, fn in rows:
        print(f"  {name:48s} {best_of(fn) * 1e3:8.3f} ms")
    print("The original code needed about 0.6 s for one learner update "
          "(T_pi built by a Python loop over 801 x 3 rows).")


if __name__ == "__main__":
    main()
