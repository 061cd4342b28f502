"""standardise: one function, two rules for a spread that is none (a curriculum's exact zero, a sum's relative)."""

import numpy as np
import pytest

from curteach_teaching.standardise import standardise


@pytest.mark.parametrize("zero", ["exact", "relative"])
def test_both_rules_standardise_a_spread_alike(zero):
    values = np.array([0.0, 3.0, 6.0])
    np.testing.assert_allclose(standardise(values, zero=zero), [-1.224744871391589, 0.0, 1.224744871391589])
    np.testing.assert_array_equal(standardise(np.full(4, 7.0), zero=zero), np.zeros(4))


def test_a_spread_at_rounding_level_is_none_by_the_relative_rule_only():
    values = np.array([1e6, 1e6 + 1e-7, 1e6])  # a spread of about 5e-8 on values of 1e6: rounding, not data
    assert np.all(standardise(values, zero="relative") == 0.0)
    exact = standardise(values, zero="exact")
    assert np.abs(exact).max() > 1.0  # blown up to whole units: what the relative rule guards a sum against


def test_the_exact_rule_zeros_a_spread_that_is_not_finite():
    values = np.array([1.0, np.inf, 2.0])
    with np.errstate(invalid="ignore"):  # inf - inf on the way to the spread
        np.testing.assert_array_equal(standardise(values, zero="exact"), np.zeros(3))


def test_another_rule_is_refused():
    with pytest.raises(ValueError, match="zero must be one of"):
        standardise(np.ones(2), zero="none")
