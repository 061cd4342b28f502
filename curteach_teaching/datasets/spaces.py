"""Spaces the datasets wing supports, and the conversions between Minari's episode values and imitation's arrays.

Observations: ``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary``, ``Text`` and ``Dict`` of those (imitation's
``DictObs``). Actions: ``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` (what imitation's trainers take).
Minari hands back a ``Text`` value as a list of ``str`` and a ``Dict`` value as a dict of such values; imitation wants
one array per key, with the time axis first, so a ``Text`` becomes an object array of ``str``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

__all__ = ["check_space", "to_trajectory_values", "to_minari_values", "env_space_matches", "describe_space"]

_ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def describe_space(space: spaces.Space) -> str:
    """The space's repr on one line (Dict reprs may span lines)."""
    return " ".join(str(space).split())


def check_space(space: spaces.Space, role: str) -> None:
    """ValueError unless ``space`` is supported as ``role`` (``"observation"`` or ``"action"``)."""
    if isinstance(space, _ARRAY_SPACES):
        return
    if role == "observation" and isinstance(space, spaces.Text):
        return
    if role == "observation" and isinstance(space, spaces.Dict):
        for key, subspace in space.spaces.items():
            if isinstance(subspace, spaces.Dict):
                raise ValueError(f"nested Dict observation spaces are not supported (key {key!r})")
            check_space(subspace, role)
        return
    allowed = "Box, Discrete, MultiDiscrete, MultiBinary" + (", Text or a Dict of those" if role == "observation"
                                                             else "")
    raise ValueError(f"unsupported {role} space {describe_space(space)}; supported: {allowed}")


def _array(space: spaces.Space, values, length: int, what: str) -> np.ndarray:
    if isinstance(space, spaces.Text):
        array = np.empty(len(values), dtype=object)  # element-wise, so strings of any length stay str
        array[:] = [str(v) for v in values]
    else:
        array = np.asarray(values)
        if array.dtype.kind not in "biuf":  # numbers of any width are cast to the space's dtype; text is not
            raise ValueError(f"{what} have dtype {array.dtype}; the space {describe_space(space)} holds {space.dtype}")
        array = array.astype(space.dtype, copy=False)
        expected = (length, *space.shape)
        if array.shape != expected:
            raise ValueError(f"{what} have shape {array.shape}; expected {expected}")
    if len(array) != length:
        raise ValueError(f"{what} hold {len(array)} entries; expected {length}")
    return array


def to_trajectory_values(space: spaces.Space, values, length: int, what: str):
    """Minari's values of ``length`` steps -> an array (or a ``DictObs`` for a Dict space), time axis first.

    Raises:
        ValueError: the values do not fit the space (shape, length, keys), naming ``what``.
    """
    if isinstance(space, spaces.Dict):
        from imitation.data.types import DictObs

        if not isinstance(values, dict) or set(values) != set(space.spaces):
            got = sorted(values) if isinstance(values, dict) else type(values).__name__
            raise ValueError(f"{what} must hold the keys {sorted(space.spaces)}; got {got}")
        return DictObs({key: _array(sub, values[key], length, f"{what}[{key!r}]") for key, sub in space.spaces.items()})
    return _array(space, values, length, what)


def to_minari_values(space: spaces.Space, values, length: int, what: str):
    """An array (or ``DictObs``, or dict) of ``length`` steps -> what Minari's ``EpisodeBuffer`` takes: arrays in the
    space's dtype, a list of ``str`` for Text, a dict for Dict.

    Raises:
        ValueError: the values do not fit the space, naming ``what``.
    """
    if isinstance(space, spaces.Dict):
        mapping = dict(values.items()) if hasattr(values, "items") else None
        if mapping is None or set(mapping) != set(space.spaces):
            got = sorted(mapping) if mapping is not None else type(values).__name__
            raise ValueError(f"{what} must hold the keys {sorted(space.spaces)}; got {got}")
        return {key: to_minari_values(subspace, mapping[key], length, f"{what}[{key!r}]")
                for key, subspace in space.spaces.items()}
    array = _array(space, values, length, what)
    if isinstance(space, spaces.Text):
        return [str(v) for v in array]
    return np.ascontiguousarray(array)


def env_space_matches(dataset_space: spaces.Space, env_space: spaces.Space) -> bool:
    """Whether an environment's space produces what a dataset's space describes.

    Equal spaces match. A dataset ``Text`` also matches any non-Gymnasium space whose samples are ``str`` (Minigrid's
    ``MissionSpace``, which Minari cannot store, so datasets record it as ``Text``); Dict spaces match key by key.
    """
    if isinstance(dataset_space, spaces.Dict):
        if not isinstance(env_space, spaces.Dict) or set(dataset_space.spaces) != set(env_space.spaces):
            return False
        return all(env_space_matches(sub, env_space.spaces[key]) for key, sub in dataset_space.spaces.items())
    if isinstance(dataset_space, spaces.Text):
        if isinstance(env_space, spaces.Text):
            return True  # lengths and charsets only bound what the env may emit
        if type(env_space).__module__.startswith("gymnasium."):
            return False
        try:
            return isinstance(env_space.sample(), str)
        except Exception:  # a custom space that cannot sample says nothing either way
            return False
    return dataset_space == env_space
