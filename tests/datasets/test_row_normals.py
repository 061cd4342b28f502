"""row_normals: NumPy's SeedSequence, PCG64 seeding and per-row normals, reproduced for many rows at once, compared
with NumPy's own objects bit for bit (seeds of one, two and three 32-bit words: the pool's second mixing loop runs
for the last), and a wrong constant caught."""

from __future__ import annotations

import numpy as np
import pytest

from curteach_teaching.datasets.scores import row_normals
from curteach_teaching.datasets.scores.row_normals import pcg64_states, row_standard_normals, seed_sequence_words

TAG = 0x736D70
ROWS = np.array([0, 1, 2, 3, 17, 1000, 2**31, 2**32 - 1])
SEEDS = (0, 7, 2**32 + 5, 2**70 + 3)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_words_states_and_draws_are_numpys(seed):
    expected_words = np.stack([np.random.SeedSequence([seed, TAG, int(r)]).generate_state(8) for r in ROWS])
    np.testing.assert_array_equal(seed_sequence_words((seed, TAG), ROWS), expected_words)
    for (state, inc), row in zip(pcg64_states((seed, TAG), ROWS), ROWS, strict=True):
        expected = np.random.PCG64(np.random.SeedSequence([seed, TAG, int(row)])).state
        assert (state, inc) == (expected["state"]["state"], expected["state"]["inc"])
    expected_draws = np.stack([np.random.default_rng(np.random.SeedSequence([seed, TAG, int(r)])).standard_normal(
        (16, 3)) for r in ROWS])
    np.testing.assert_array_equal(row_standard_normals((seed, TAG), ROWS, (16, 3)), expected_draws)


def test_a_prefix_of_another_length_and_no_rows():
    expected = np.random.SeedSequence([5, int(ROWS[4])]).generate_state(8)
    np.testing.assert_array_equal(seed_sequence_words((5,), ROWS[4:5])[0], expected)
    assert row_standard_normals((0, TAG), np.array([], dtype=np.int64), (2, 2)).shape == (0, 2, 2)


def test_bad_rows_and_seeds_are_refused():
    with pytest.raises(ValueError, match="rows must be in"):
        seed_sequence_words((0,), np.array([2**32]))
    with pytest.raises(ValueError, match="a seed must be >= 0"):
        seed_sequence_words((-1,), ROWS)


def test_a_wrong_constant_is_caught(monkeypatch):
    monkeypatch.setattr(row_normals, "_MIX_R", row_normals._MIX_R ^ 1)
    expected = np.random.SeedSequence([0, TAG, 3]).generate_state(8)
    assert not np.array_equal(seed_sequence_words((0, TAG), np.array([3]))[0], expected)
