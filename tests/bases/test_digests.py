"""The digests saved results and caches are keyed by: every value fed with its kind and size, so that different data
never feeds the same bytes; the bytes checked by hand."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from curteach_teaching.digests import feed, trajectories_digest


def fed(*values) -> str:
    digest = hashlib.sha256()
    for value in values:
        feed(digest, value)
    return digest.hexdigest()


def test_the_bytes_fed_by_hand():
    array = np.array([[1, 2, 3]], dtype="<i8")
    assert fed(array) == hashlib.sha256(b"a<i8(1, 3)|" + array.tobytes()).hexdigest()
    assert fed("ab", 3, 0.5, True, None, b"xy") == hashlib.sha256(b"s2|ab" b"i3|" b"f0.5|" b"btrue|" b"Nnull|"
                                                                  b"y2|xy").hexdigest()
    assert fed({"b": 1, "a": [2]}) == hashlib.sha256(b"m2|s1|al1|i2|s1|bi1|").hexdigest()  # keys sorted


def test_different_data_feeds_different_bytes():
    x = np.arange(6, dtype=np.float32)
    distinct = [x, x.astype(np.float64), x.reshape(2, 3), x.reshape(3, 2), x + 1, 1, 1.0, True, "1", None, [1],
                ["ab", "c"], ["a", "bc"], {"a": 1}, {"a": 1.0}, np.array(["a", "b"], dtype=object)]
    digests = [fed(value) for value in distinct]
    assert len(set(digests)) == len(distinct)
    assert fed(["ab", "c"]) != fed("ab", "c")  # a list is framed by its length
    assert fed(np.float32(0.5)) == fed(0.5) and fed(np.int64(3)) == fed(3)  # NumPy scalars as Python's
    assert fed({"a": 1, "b": 2}) == fed({"b": 2, "a": 1})
    grid = np.arange(6.0).reshape(2, 3)
    assert fed(np.asfortranarray(grid)) == fed(grid)  # the values, not their layout in memory


def test_dictobs_is_the_mapping_it_wraps():
    from imitation.data.types import DictObs

    arrays = {"image": np.zeros((3, 2, 2), dtype=np.uint8), "state": np.arange(6.0).reshape(3, 2)}
    assert fed(DictObs(arrays)) == fed(arrays)


def test_a_value_it_cannot_cover_is_named():
    with pytest.raises(ValueError, match="cannot digest a value of type set"):
        fed({1, 2})


def test_trajectories_digest_covers_observations_actions_rewards_and_terminal():
    from imitation.data.types import Trajectory, TrajectoryWithRew

    rng = np.random.default_rng(0)
    obs, acts, rews = rng.normal(size=(4, 2)), rng.normal(size=(3, 2)), np.array([0.0, 0.0, 1.0])
    base = TrajectoryWithRew(obs=obs, acts=acts, infos=None, terminal=True, rews=rews)
    same = TrajectoryWithRew(obs=obs.copy(), acts=acts.copy(), infos=None, terminal=True, rews=rews.copy())
    assert trajectories_digest([base]) == trajectories_digest([same])
    changed = [
        TrajectoryWithRew(obs=obs * 100, acts=acts, infos=None, terminal=True, rews=rews),
        TrajectoryWithRew(obs=obs, acts=acts[::-1].copy(), infos=None, terminal=True, rews=rews),
        TrajectoryWithRew(obs=obs, acts=acts, infos=None, terminal=True, rews=rews[::-1].copy()),
        TrajectoryWithRew(obs=obs, acts=acts, infos=None, terminal=False, rews=rews),
        Trajectory(obs=obs, acts=acts, infos=None, terminal=True),
    ]
    assert len({trajectories_digest([t]) for t in [base, *changed]}) == 1 + len(changed)
    assert trajectories_digest([base, same]) != trajectories_digest([base])
