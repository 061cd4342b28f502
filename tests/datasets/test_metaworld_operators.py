"""make-dataset metaworld's operator styles: the transformations on hand-checked cases, the spec, the shares."""

from __future__ import annotations

import numpy as np
import pytest

from curteach_teaching.datasets.sources import metaworld_operators as ops
from curteach_teaching.datasets.sources.metaworld_operators import (
    OperatorController,
    assign_operators,
    careful_action,
    hasty_action,
    parse_operators,
)


def test_a_spec_parses_into_styles_and_shares():
    assert parse_operators("careful:0.3, hasty:0.4,hesitant:0.3") == (("careful", 0.3), ("hasty", 0.4),
                                                                      ("hesitant", 0.3))
    assert parse_operators("noisy:1") == (("noisy", 1.0),)


@pytest.mark.parametrize("spec, message", [
    ("careful:0.5,sloppy:0.5", "unknown style 'sloppy'; styles: careful, hesitant, hasty, noisy"),
    ("careful:0.5,careful:0.5", "style 'careful' is given twice"),
    ("careful", "'careful' is not STYLE:SHARE"),
    ("careful:half,hasty:0.5", "the share of 'careful' must be a number in (0, 1]; got 'half'"),
    ("careful:0,hasty:1", "the share of 'careful' must be a number in (0, 1]"),
    ("careful:0.5,hasty:0.4", "the shares must sum to 1; they sum to 0.9"),
    ("", "operators must be STYLE:SHARE"),
])
def test_a_bad_spec_is_one_line(spec, message):
    with pytest.raises(ValueError) as error:
        parse_operators(spec)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_shares_become_counts_that_sum_to_the_episodes_spread_by_the_generator():
    shares = (("careful", 0.3), ("hasty", 0.4), ("hesitant", 0.3))
    styles = assign_operators(shares, 10, np.random.default_rng(7))
    assert [styles.count(s) for s in ("careful", "hasty", "hesitant")] == [3, 4, 3]
    # the permutation is the generator's: position i holds the style at rng.permutation(10)[i] of the sorted list
    ordered = ["careful"] * 3 + ["hasty"] * 4 + ["hesitant"] * 3
    assert styles == [ordered[i] for i in np.random.default_rng(7).permutation(10)]
    # thirds of 7: cumulative 2.33 -> 2, 4.67 -> 5, 7: counts 2, 3, 2
    thirds = assign_operators((("careful", 1 / 3), ("hasty", 1 / 3), ("hesitant", 1 / 3)), 7,
                              np.random.default_rng(0))
    assert [thirds.count(s) for s in ("careful", "hasty", "hesitant")] == [2, 3, 2]


def test_careful_clips_then_slows_the_hand_and_keeps_the_gripper():
    out = careful_action(np.array([2.0, -0.5, 0.1, 0.6], dtype=np.float32), factor=0.7)
    np.testing.assert_allclose(out, [0.7, -0.35, 0.07, 0.6], rtol=1e-6)
    assert ops.CAREFUL_FACTOR < 1


def test_hasty_speeds_and_biases_the_hand_and_keeps_the_gripper():
    out = hasty_action(np.array([0.1, -0.2, 0.5, -1.0]), np.array([0.3, 0.0, -0.1]), gain=3.0)
    np.testing.assert_allclose(out, [0.6, -0.6, 1.4, -1.0])  # 1.4 is clipped to 1 by the episode loop


def test_the_hasty_operator_draws_a_bias_of_its_norm_and_a_budget_then_stops():
    rng = np.random.default_rng(11)
    operator = OperatorController("hasty", rng)
    assert np.linalg.norm(operator.bias) == pytest.approx(ops.HASTY_BIAS)
    assert ops.HASTY_BUDGET[0] <= operator.budget <= ops.HASTY_BUDGET[1]
    assert not operator.stops_after(operator.budget - 1) and operator.stops_after(operator.budget)
    acted = operator.act(0, np.array([0.1, 0.0, -0.1, 1.0]))
    np.testing.assert_allclose(acted, [*(ops.HASTY_GAIN * np.array([0.1, 0.0, -0.1]) + operator.bias), 1.0])


def test_the_hesitant_operator_pauses_the_hand_exactly_in_its_seeded_window():
    operator = OperatorController("hesitant", np.random.default_rng(3))
    start, length = operator.pause
    assert ops.PAUSE_START[0] <= start <= ops.PAUSE_START[1] and ops.PAUSE_LENGTH[0] <= length <= ops.PAUSE_LENGTH[1]
    assert operator.pause == OperatorController("hesitant", np.random.default_rng(3)).pause  # seeded
    expert = np.array([0.4, -0.3, 0.2, 0.8])
    for step, paused in ((start - 1, False), (start, True), (start + length - 1, True), (start + length, False)):
        want = np.array([0.0, 0.0, 0.0, 0.8]) if paused else expert
        np.testing.assert_array_equal(operator.act(step, expert), want)
    assert not operator.stops_after(10**6)
    # over many seeds the pause covers the whole of its ranges and no more
    pauses = np.array([OperatorController("hesitant", np.random.default_rng(s)).pause for s in range(2000)])
    assert pauses[:, 0].min() == ops.PAUSE_START[0] and pauses[:, 0].max() == ops.PAUSE_START[1]
    assert pauses[:, 1].min() == ops.PAUSE_LENGTH[0] and pauses[:, 1].max() == ops.PAUSE_LENGTH[1]


def test_the_noisy_operator_draws_the_noise_as_the_plain_noisy_episode_does():
    operator = OperatorController("noisy", np.random.default_rng(5), noise=0.5)
    reference = np.random.default_rng(5)
    action = np.array([0.1, 0.2, 0.3, 0.4])
    for step in range(3):
        np.testing.assert_array_equal(operator.act(step, action), action + 0.5 * reference.standard_normal(4))


def test_careful_draws_nothing_and_every_style_has_a_tier():
    rng = np.random.default_rng(0)
    OperatorController("careful", rng).act(0, np.zeros(4))
    assert rng.bit_generator.state == np.random.default_rng(0).bit_generator.state
    assert set(ops.STYLES.values()) == set(ops.TIERS)
    with pytest.raises(ValueError, match="unknown operator style 'lazy'"):
        OperatorController("lazy", rng)
