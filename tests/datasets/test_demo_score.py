"""demo-score's parts on hand-made data: the classifier's selection by the held-out checkpoint, the scores' order on
states that separate perfectly, the rollouts' outcomes, the one-outcome refusal, and the rollout seeds."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("torch")

from curteach_teaching.datasets.scores.demo_score import DemoScore, rollout_outcomes  # noqa: E402
from curteach_teaching.datasets.scores.env_rollouts import (  # noqa: E402
    ROLLOUT_SEED_BASE,
    RecordedEpisode,
    fresh_seeds,
)
from curteach_teaching.datasets.scores.success_classifier import fit_success_classifier  # noqa: E402


def separable(n, sign, rng):
    """``(n, 2)`` states whose first coordinate has the sign ``sign`` (at least 0.5 away from 0)."""
    return np.column_stack([sign * rng.uniform(0.5, 2.0, n), rng.normal(size=n)])


def bce(p, y):
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def test_the_chosen_epoch_is_the_lowest_held_out_loss_and_its_weights_are_kept():
    rng = np.random.default_rng(0)
    x = np.concatenate([separable(40, 1, rng), separable(40, -1, rng)])
    y = np.repeat([1.0, 0.0], 40)
    held = np.concatenate([separable(10, 1, rng), separable(10, -1, rng)])
    same = fit_success_classifier(x, y, held, np.repeat([1.0, 0.0], 10), hidden=8, epochs=30, seed=1)
    assert same.epoch == int(np.argmin(same.held_out_losses)) + 1
    # the kept weights are that epoch's: their held-out BCE, computed here from the predictions, is the minimum
    assert bce(same.predict(held), np.repeat([1.0, 0.0], 10)) == pytest.approx(same.held_out_losses.min(), rel=1e-5)
    assert same.epoch > 1 and same.held_out_losses[-1] < same.held_out_losses[0]  # learning helps the held-out
    # a held-out checkpoint labelled the other way round: every epoch of learning makes it worse, the first is kept
    flipped = fit_success_classifier(x, y, held, np.repeat([0.0, 1.0], 10), hidden=8, epochs=30, seed=1)
    assert flipped.epoch == 1 and np.all(np.diff(flipped.held_out_losses) > 0)
    # the same seed trains the same network: only the held-out labels, hence the choice, differ
    np.testing.assert_allclose(flipped.predict(x[:1]), fit_success_classifier(
        x, y, held, np.repeat([0.0, 1.0], 10), hidden=8, epochs=1, seed=1).predict(x[:1]))


def test_training_is_seeded():
    rng = np.random.default_rng(0)
    x = np.concatenate([separable(20, 1, rng), separable(20, -1, rng)])
    y = np.repeat([1.0, 0.0], 20)
    a, b = (fit_success_classifier(x, y, x, y, hidden=4, epochs=3, seed=5) for _ in range(2))
    np.testing.assert_array_equal(a.held_out_losses, b.held_out_losses)
    other = fit_success_classifier(x, y, x, y, hidden=4, epochs=3, seed=6)
    assert not np.array_equal(a.held_out_losses, other.held_out_losses)


def episode(group, states, success, ret=0.0, reported=True):
    return RecordedEpisode(group=group, seed=0, observations=np.asarray(states, dtype=np.float32),
                           actions=np.zeros(len(states), dtype=np.int64), episode_return=ret, success=success,
                           reported=reported)


def demonstration(states):
    """An imitation-like demonstration: ``T + 1`` observations (the last one not acted on) and ``T`` actions."""
    states = np.asarray(states, dtype=np.float32)
    return SimpleNamespace(obs=np.concatenate([states, states[-1:] * 0 + 99]), acts=np.zeros(len(states)))


def test_scores_order_demonstrations_by_the_states_of_successful_rollouts():
    rng = np.random.default_rng(3)
    checkpoints = [[episode("g", separable(12, +1, rng), True), episode("g", separable(12, -1, rng), False),
                    episode("g", separable(12, +1, rng), True), episode("g", separable(12, -1, rng), False)]
                   for _ in range(3)]
    demos = [demonstration(separable(6, +1, rng)),  # all in the successes' region: kept first
             demonstration(np.concatenate([separable(3, +1, rng), separable(3, -1, rng)])),  # half and half
             demonstration(separable(6, -1, rng))]  # all in the failures' region: dropped first
    score = DemoScore(demo_score_epochs=1500, demo_score_hidden=8)
    values, classifier = score.scores(SimpleNamespace(trajectories=demos), checkpoints, seed=0)
    assert values.shape == (3,) and values[0] < values[1] < values[2]
    assert values[0] < 0.1 and values[2] > 0.9 and 0.3 < values[1] < 0.7  # 1 - the mean P(success), in [0, 1]
    # a demonstration's value is 1 - the mean over its T states (the final observation, never acted on, left out)
    expected = 1 - classifier.predict(np.asarray(demos[1].obs[:-1], dtype=np.float64)).mean()
    assert values[1] == pytest.approx(expected)


def test_rollouts_of_one_outcome_are_refused_naming_the_counts():
    rng = np.random.default_rng(0)
    checkpoints = [[episode("g", separable(5, 1, rng), True) for _ in range(2)] for _ in range(2)]
    checkpoints[1][0] = episode("g", separable(5, -1, rng), False)  # the held-out checkpoint has both: not enough
    with pytest.raises(ValueError, match=r"of the 2 rollouts of its first 1 checkpoints 2 succeeded and 0 failed "
                                         r"\(the held-out checkpoint: 1 of 2\)"):
        DemoScore().scores(SimpleNamespace(trajectories=[demonstration(separable(3, 1, rng))]), checkpoints, 0)


def test_outcomes_are_reported_successes_else_a_return_above_the_groups_median():
    groups = ["a", "a", "a", "b", "b", "b", "b"]
    returns = np.array([5.0, 1.0, 3.0, -4.0, -1.0, -3.0, -2.0])
    successes = np.array([False, True, False, True, False, False, True])
    reported = np.array([True, True, True, False, False, True, False])  # b: not every rollout reports one
    outcome = rollout_outcomes(groups, returns, successes, reported)
    # a: the reported successes; b: median of (-4, -1, -3, -2) is -2.5, so -1 and -2 are above it
    assert outcome.tolist() == [False, True, False, False, True, False, True]


def test_rollout_seeds_skip_the_data_and_the_evaluation():
    data = SimpleNamespace(groups=("a", "a", "b"), seeds=(ROLLOUT_SEED_BASE + 1, None, ROLLOUT_SEED_BASE))
    seeds = fresh_seeds(data, 3)
    assert seeds["a"].tolist() == [ROLLOUT_SEED_BASE, ROLLOUT_SEED_BASE + 2, ROLLOUT_SEED_BASE + 3]
    assert seeds["b"].tolist() == [ROLLOUT_SEED_BASE + 1, ROLLOUT_SEED_BASE + 2, ROLLOUT_SEED_BASE + 3]


@pytest.mark.parametrize(("option", "value", "message"), [
    ("demo_score_checkpoints", 1, "demo_score_checkpoints must be"), ("demo_score_rollouts", 0, "must be"),
    ("demo_score_hidden", 0, "demo_score_hidden must be"), ("demo_score_steps", 0, "demo_score_steps must be"),
    ("demo_score_actions", "mean", "demo_score_actions must be one of greedy, sampled; got 'mean'")])
def test_bad_options_are_refused(option, value, message):
    with pytest.raises(ValueError, match=message):
        DemoScore(**{option: value})


def test_the_registry_says_which_scores_need_an_environment():
    from curteach_teaching.datasets.scores.registry import (
        environment_free_names,
        needs_environment,
        refuse_without_environment,
    )

    assert needs_environment("demo-score") and needs_environment("length+2*demo-score")
    assert not needs_environment("ensemble+100*not:success") and not needs_environment("noisy")
    free = environment_free_names()
    assert "demo-score" not in free and free[:5] == ("length", "return", "level", "ensemble", "deminf")
    refuse_without_environment(["length", "ensemble"], "there is none")  # nothing to refuse
    with pytest.raises(ValueError, match=r"^task score length\+demo-score rolls policies out in the data's "
                                         r"environment, and there is none; the scores that need none: length, "):
        refuse_without_environment(["length", "length+demo-score"], "there is none")


def test_the_actions_key_the_settings_only_where_greedy():
    greedy, sampled = DemoScore(), DemoScore(demo_score_actions="sampled")
    assert greedy.settings()["demo_score_actions"] == "greedy"
    # sampled: the settings (and so the cache keys) the score had before the option existed
    assert sampled.settings() == {"demo_score_steps": None, "demo_score_checkpoints": 3, "demo_score_rollouts": 10,
                                  "demo_score_epochs": 50, "demo_score_hidden": 32}
    assert sampled.describe()["demo_score_actions"] == "sampled"  # rank.json says it either way
