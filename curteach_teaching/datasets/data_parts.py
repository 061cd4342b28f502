"""The pool's data in parts: a digest of each part and of each episode's share of it, to name what differs.

:func:`~curteach_teaching.datasets.prepared.pool_digest` names the data a sweep was made on by one SHA-256 of
everything a run may read. When two pools' digests differ, that one value cannot say where; these parts can:

* ``episodes``: each episode's group, id, reset seed, length (actions) and terminal flag;
* ``observations``, ``actions``, ``rewards`` (``None`` where the pool has none): the trajectory's arrays;
* ``metadata``: the episode's metadata (robomimic's filter keys, Meta-World's ``noisy``, ...);
* ``infos``: its step infos.

Each part gets a full SHA-256 over its episodes and, per episode, the first :data:`SHORT` hex digits of that
episode's digest of the part (48 bits: two different values share them with a chance of about 2**-48, enough to name
an episode; the full part digest is what decides). Every value goes in through
:func:`~curteach_teaching.digests.feed` (tagged with its kind, dtype and shape). Beside the digests, each episode's
summed rewards (float64) are kept, so a difference in rewards can be sized, not only located, and the observations
are digested once more as float32 (:data:`FLOAT32`): the precision the torch learners read them at, so observations
that differ only in float64's last bits can be told from observations a learner sees differently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from curteach_teaching.digests import feed

__all__ = [
    "FLOAT32",
    "PARTS",
    "SHORT",
    "as_float32",
    "compare_parts",
    "data_parts",
    "describe_part",
    "reward_change",
    "same_as_float32",
]

#: the parts, in the order they are named
PARTS = ("episodes", "observations", "actions", "rewards", "metadata", "infos")
#: hex digits kept of each episode's digest of a part
SHORT = 12
#: the key of the observations' float32 digests (beside the parts, not one of them)
FLOAT32 = "observations_float32"
#: how many episodes a description names before it counts the rest
NAMED = 5


def _values(pool: Any, index: int) -> tuple:
    """The six parts of episode ``index``, in the order of :data:`PARTS`."""
    trajectory = pool.trajectories[index]
    episode = (pool.groups[index], int(pool.episode_ids[index]), pool.seeds[index], int(len(trajectory.acts)),
               bool(trajectory.terminal))
    return (episode, trajectory.obs, trajectory.acts, getattr(trajectory, "rews", None), pool.metadata[index],
            pool.infos[index])


def as_float32(value: Any) -> Any:
    """``value`` with every floating array cast to float32 (a mapping's arrays each; others as they are)."""
    if hasattr(value, "unwrap") and hasattr(value, "items"):  # imitation's DictObs
        value = dict(value.items())
    if isinstance(value, dict):
        return {key: as_float32(item) for key, item in value.items()}
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return value.astype(np.float32)
    return value


def data_parts(pool: Any) -> dict:
    """The parts of ``pool``'s data (JSON-serialisable).

    Returns:
        ``{"episodes": N [group, id] pairs, "parts": {part: {"digest": 64 hex, "episodes": N hex strings of
        SHORT}}, FLOAT32: the same of the observations cast to float32, "reward_sums": N floats (each episode's
        summed rewards, float64) or None}``.
    """
    whole = {part: hashlib.sha256(f"curteach data part v1 {part}\n".encode()) for part in PARTS}
    short: dict = {part: [] for part in PARTS}
    for index in range(len(pool.trajectories)):
        for part, value in zip(PARTS, _values(pool, index), strict=True):
            digest = hashlib.sha256()
            feed(digest, value)
            full = digest.hexdigest()
            whole[part].update(full.encode())  # the part's digest: its episodes' digests in order
            short[part].append(full[:SHORT])
    casts = hashlib.sha256(f"curteach data part v1 {FLOAT32}\n".encode())
    cast_short = []
    for trajectory in pool.trajectories:
        digest = hashlib.sha256()
        feed(digest, as_float32(trajectory.obs))
        casts.update(digest.hexdigest().encode())
        cast_short.append(digest.hexdigest()[:SHORT])
    sums = None
    if all(getattr(t, "rews", None) is not None for t in pool.trajectories):
        sums = [float(np.sum(np.asarray(t.rews, dtype=np.float64))) for t in pool.trajectories]
    return {"episodes": [[str(group), int(episode)] for group, episode in zip(pool.groups, pool.episode_ids.tolist(),
                                                                              strict=True)],
            "parts": {part: {"digest": whole[part].hexdigest(), "episodes": short[part]} for part in PARTS},
            FLOAT32: {"digest": casts.hexdigest(), "episodes": cast_short}, "reward_sums": sums}


def _keys(document: Mapping) -> list[tuple]:
    return [(str(group), int(episode)) for group, episode in document["episodes"]]


def compare_parts(recorded: Mapping, current: Mapping) -> dict:
    """Which parts differ between two :func:`data_parts` documents, and in which episodes.

    Episodes are matched by ``(group, id)``: an episode that only one side holds, or a different order, is a
    difference in ``episodes``; the other parts are compared on the episodes both hold.

    Returns:
        ``{part: [(group, id), ...]}`` for every part whose digest differs, its differing episodes in the current
        pool's order (an empty list where the part differs but no shared episode does: episodes missing on one
        side), in the order of :data:`PARTS`.

    Raises:
        KeyError, TypeError, ValueError: a document not of :func:`data_parts`' form.
    """
    old_keys, new_keys = _keys(recorded), _keys(current)
    old_at = {key: i for i, key in enumerate(old_keys)}
    found = {}
    for part in PARTS:
        old, new = recorded["parts"][part], current["parts"][part]
        if old["digest"] == new["digest"] and old_keys == new_keys:
            continue
        episodes = [key for j, key in enumerate(new_keys)
                    if key in old_at and old["episodes"][old_at[key]] != new["episodes"][j]]
        if part == "episodes":
            episodes += [key for key in new_keys if key not in old_at]
        if old["digest"] != new["digest"] or episodes:
            found[part] = episodes
    if old_keys != new_keys and "episodes" not in found:
        found = {"episodes": [key for key in new_keys if key not in old_at], **found}
    return found


def describe_part(part: str, episodes: Sequence[tuple], total: int) -> str:
    """``"rewards (212 of 300 episodes: metaworld-push-v0 3, 7, 9; pick 1 and 208 more)"``: the first
    :data:`NAMED` episodes by group and id, and a count of the rest."""
    if not episodes:
        return f"{part} (the episodes held, or their order)"
    named: dict = {}
    for group, episode in episodes[:NAMED]:
        named.setdefault(group, []).append(str(episode))
    listed = "; ".join(f"{group} {', '.join(ids)}" for group, ids in named.items())
    more = f" and {len(episodes) - NAMED} more" if len(episodes) > NAMED else ""
    return f"{part} ({len(episodes)} of {total} episodes: {listed}{more})"


def reward_change(recorded: Mapping, current: Mapping) -> float | None:
    """The largest absolute difference of an episode's summed rewards between two :func:`data_parts` documents
    (over the episodes both hold), or ``None`` where either records no rewards."""
    old, new = recorded.get("reward_sums"), current.get("reward_sums")
    if old is None or new is None:
        return None
    old_at = {key: i for i, key in enumerate(_keys(recorded))}
    pairs = [(old[old_at[key]], new[j]) for j, key in enumerate(_keys(current)) if key in old_at]
    if not pairs:
        return None
    before, after = np.asarray(pairs, dtype=np.float64).T
    return float(np.max(np.abs(after - before)))


def same_as_float32(recorded: Mapping, current: Mapping) -> bool:
    """Whether two :func:`data_parts` documents' observations are equal once cast to float32 (``False`` where either
    lacks those digests)."""
    old, new = recorded.get(FLOAT32), current.get(FLOAT32)
    return isinstance(old, Mapping) and isinstance(new, Mapping) and old.get("digest") == new.get("digest") and \
        _keys(recorded) == _keys(current)
