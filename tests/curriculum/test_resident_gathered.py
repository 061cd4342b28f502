"""ResidentPool.gathered: each batch's rows as indices() and batch() give them, gathered a block of batches at a
time, with blocks split where the cap or the alignment says; Dict observations too."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from curteach_teaching.curriculum import resident
from curteach_teaching.curriculum.resident import ResidentPool


def _pool(obs, n=200):
    rng = np.random.default_rng(0)
    return ResidentPool(obs, rng.integers(0, 4, n), np.arange(n), "cpu")


def _check(pool, batches):
    got = list(pool.gathered(batches))
    assert len(got) == len(batches)
    for (index, obs, acts), expected_index, batch in zip(got, pool.indices(batches), batches, strict=True):
        want_obs, want_acts = pool.batch(expected_index)
        assert th.equal(index, expected_index) and th.equal(acts, want_acts) and acts.is_contiguous()
        if isinstance(obs, dict):
            assert obs.keys() == want_obs.keys() and all(th.equal(obs[k], want_obs[k]) for k in obs)
        else:
            assert th.equal(obs, want_obs) and obs.is_contiguous()
            assert obs.data_ptr() % resident.ALIGNMENT == 0  # every batch starts where a fresh allocation would
        assert len(index) == len(batch)
    return got


def _blocks(got):
    """How many distinct blocks the batches' actions were cut from."""
    return len({acts.untyped_storage().data_ptr() for _, _, acts in got})


def test_batches_are_the_rows_of_their_indices_in_one_block():
    pool = _pool(np.random.default_rng(1).normal(size=(200, 16)).astype(np.float32))
    rng = np.random.default_rng(2)
    batches = [rng.integers(0, 200, 32) for _ in range(5)] + [rng.integers(0, 200, 8)]
    assert _blocks(_check(pool, batches)) == 1
    assert list(pool.gathered([])) == []


def test_the_cap_and_the_alignment_cut_blocks(monkeypatch):
    obs = np.random.default_rng(1).normal(size=(200, 3)).astype(np.float32)  # 12 + 8 bytes a row
    pool = _pool(obs)
    rng = np.random.default_rng(3)
    monkeypatch.setattr(resident, "BLOCK_BYTES", 20 * 64)  # 64 rows a block
    assert _blocks(_check(pool, [rng.integers(0, 200, 32) for _ in range(4)])) == 2
    monkeypatch.setattr(resident, "BLOCK_BYTES", 1 << 22)
    # a batch of 5 rows leaves the next batch at 60 bytes of observations: it starts a block of its own
    assert _blocks(_check(pool, [rng.integers(0, 200, 5), rng.integers(0, 200, 16), rng.integers(0, 200, 16)])) == 2


@pytest.mark.parametrize("size", [1, 7, 300])
def test_a_batch_larger_than_the_cap_is_its_own_block(size, monkeypatch):
    pool = _pool(np.random.default_rng(1).normal(size=(400, 4)).astype(np.float32), n=400)
    monkeypatch.setattr(resident, "BLOCK_BYTES", 8)
    batches = [np.random.default_rng(size).integers(0, 400, size) for _ in range(3)]
    assert _blocks(_check(pool, batches)) == 3


def test_dict_observations():
    from imitation.data import types

    rng = np.random.default_rng(4)
    obs = types.DictObs({"a": rng.normal(size=(50, 2)).astype(np.float32), "b": rng.integers(0, 9, (50, 3))})
    pool = _pool(obs, n=50)
    _check(pool, [rng.integers(0, 50, 16) for _ in range(3)])
