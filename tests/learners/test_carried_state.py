"""A learner acting from a state it carries (curteach_teaching.learners.carried_state) and bc-rnn's three ways of
acting: the state rows by hand, each way against the LSTM run by hand over the steps it should have seen, and the
evaluator resetting a slot's state at each episode's start, batched as serial."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from curteach_teaching.learners.bc_rnn import BCRNNLearner  # noqa: E402
from curteach_teaching.learners.carried_state import StateRows, carries_state  # noqa: E402
from curteach_teaching.rollouts import evaluate_policy, evaluate_policy_serial  # noqa: E402

OBS = gym.spaces.Box(-8.0, 8.0, (3,), np.float32)
ACTS = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


class Counting:
    """A state of one int per row (how many steps the row has taken) and one of two numbers, as NumPy arrays."""

    def initial_state(self, n):
        return np.zeros(n, dtype=np.int64), np.full((n, 2), -1.0)

    def act_step(self, obs, state, streams):
        steps, last = state
        return steps.astype(float), (steps + 1, np.asarray(obs, dtype=float)[:, :2])


def test_state_rows_reset_gather_and_write_back_per_slot():
    rows = StateRows(Counting(), 3)
    for slot in range(3):
        rows.start(slot)
    assert rows.act(np.ones((2, 3)), [2, 0], None).tolist() == [0.0, 0.0]
    assert rows.act(np.full((3, 3), 5.0), [0, 1, 2], None).tolist() == [1.0, 0.0, 1.0]
    rows.start(0)  # slot 0's next episode: its count and its numbers are the initial ones again
    steps, last = rows.take([0, 1, 2])
    assert steps.tolist() == [0, 1, 2] and last.tolist() == [[-1, -1], [5, 5], [5, 5]]
    assert carries_state(Counting()) and not carries_state(object())


def _greedy_of(learner, lstm_output):
    logits, means, _ = learner._squashed(*learner.network.heads(lstm_output))
    best = logits.argmax(dim=1)
    return means[torch.arange(len(means)), best].double().numpy() * learner._scale + learner._center


def _by_hand(learner, sequence):
    """Greedy actions of running the LSTM from a zero state over ``sequence`` ``(T, S)``: the last output of each
    prefix."""
    with torch.no_grad():
        out = learner.network.lstm(torch.as_tensor(sequence[None], dtype=torch.float32))[0][0]
        return _greedy_of(learner, out)


@pytest.mark.parametrize("acting", ["window", "carried", "horizon"])
def test_each_way_of_acting_is_the_lstm_over_the_steps_it_names(acting):
    learner = BCRNNLearner(OBS, ACTS, seed=3, hidden_size=8, window=3, acting=acting)
    episode = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    state, actions = learner.initial_state(1), []
    for t in range(7):
        action, state = learner.act_step(episode[t:t + 1], state)
        actions.append(action[0])
    expected = []
    for t in range(7):
        if acting == "carried":  # every step since the episode's start
            seen = episode[:t + 1]
        elif acting == "horizon":  # since the last multiple of W (robomimic's reset)
            seen = episode[t - t % 3:t + 1]
        else:  # the last W, the first observation repeated before the start
            seen = episode[np.maximum(np.arange(t - 2, t + 1), 0)]
        expected.append(_by_hand(learner, seen)[-1])
    np.testing.assert_allclose(np.asarray(actions), np.asarray(expected), rtol=1e-5, atol=1e-6)


def test_the_window_way_is_act_on_the_window():
    learner = BCRNNLearner(OBS, ACTS, seed=1, hidden_size=8, window=4, acting="window")
    assert learner.acting == "window" and BCRNNLearner(OBS, ACTS, seed=1, hidden_size=8).acting == "horizon"
    obs = np.random.default_rng(2).normal(size=(2, 5, 3)).astype(np.float32)  # two rows, five steps
    state = learner.initial_state(2)
    for t in range(5):
        stepped, state = learner.act_step(obs[:, t], state)
    window = obs[:, 1:5]
    np.testing.assert_array_equal(stepped, learner.act(window))



@pytest.mark.parametrize("acting", ["carried", "horizon"])
@pytest.mark.parametrize("deterministic", [True, False])
def test_the_evaluator_resets_each_slots_state_at_its_episodes_start(acting, deterministic):
    learner = BCRNNLearner(OBS, ACTS, seed=0, hidden_size=8, window=3, acting=acting)

    def make():
        return gym.wrappers.TimeLimit(gym.make("Pendulum-v1").unwrapped, 12)

    seeds = [4, 5, 6, 7, 8]
    # two slots for five episodes: a slot's later episodes must not start from its earlier one's state
    batched = evaluate_policy(learner, make, seeds, deterministic=deterministic, generator=9, max_envs=2)
    serial = evaluate_policy_serial(learner, make, seeds, deterministic=deterministic, generator=9)
    alone = [evaluate_policy(learner, make, [seed], deterministic=deterministic, generator=9).returns[0]
             for seed in seeds]
    # float32 batches of other sizes round otherwise; a state not reset would move a return by far more
    np.testing.assert_allclose(batched.returns, serial.returns, rtol=1e-5)
    if deterministic:  # each greedy episode as if it were the only one (a sampled one's stream depends on its index)
        np.testing.assert_allclose(batched.returns, alone, rtol=1e-5)
    # the state matters: carried and window act differently on the same weights
    learner.acting = "window"
    windowed = evaluate_policy(learner, make, seeds, deterministic=deterministic, generator=9, max_envs=2)
    assert not np.allclose(windowed.returns, batched.returns)
