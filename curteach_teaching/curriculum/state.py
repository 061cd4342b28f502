"""A curriculum's saved state: everything of a run but the trainer's policy and optimizer (which torch saves).

The state is plain Python values (``torch.save(..., weights_only=True)`` and JSON can hold it)::

    {"format": tag, "config": {...}, "step": int, "rng": {...}, "history": [{...}, ...], "callbacks": [...]}

the curriculum's ``config()`` (what a resumed run must share with the saved one), the global optimizer step, the
state of the batches' generator, the history (:class:`~curteach_teaching.curriculum.selection.EpochRecord` fields as a
dict
per epoch) and the ``state_dict()`` of each callback saved with the curriculum, in order
(:func:`~curteach_teaching.curriculum.callbacks.saved_callbacks`; a callback without state may be added or left out
on resuming).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.callbacks import saved_callbacks
from curteach_teaching.curriculum.selection import EpochRecord

__all__ = ["STATE_KEYS", "curriculum_state", "load_curriculum_state"]

#: The keys of a saved state.
STATE_KEYS = ("format", "config", "step", "rng", "history", "callbacks")


def curriculum_state(curriculum: Any, state_format: str) -> dict:
    """The state of ``curriculum`` (a :class:`~curteach_teaching.curriculum.core.Curriculum`), tagged
    ``state_format``; see the module docstring."""
    history = [
        {**dataclasses.asdict(record), "selected": np.asarray(record.selected).tolist()}
        for record in curriculum.history
    ]
    for record in history:
        record.update({k: v.item() for k, v in record.items() if isinstance(v, np.generic)})
    return {
        "format": state_format,
        "config": curriculum.config(),
        "step": curriculum.step,
        "rng": copy.deepcopy(curriculum.rng.bit_generator.state),
        "history": history,
        "callbacks": [callback.state_dict() for callback in _with_state(curriculum.callbacks)],
    }


def load_curriculum_state(curriculum: Any, state: dict, state_format: str) -> None:
    """Restore a :func:`curriculum_state` into ``curriculum``: its step, generator, history and callbacks' states.

    Nothing is changed unless the whole state fits.

    Raises:
        ValueError: not a state tagged ``state_format``, a state of another configuration, of another generator, or
            with callback states that the callbacks cannot take.
    """
    keys = set(STATE_KEYS)
    if not isinstance(state, dict) or set(state) != keys or state["format"] != state_format:
        raise ValueError(f"not a {type(curriculum).__name__} state ({state_format}, keys {sorted(keys)})")
    config = curriculum.config()
    if state["config"] != config:
        differ = sorted(k for k in config if state["config"].get(k) != config[k])
        raise ValueError(f"the saved curriculum differs from this one in {differ}: {state['config']} vs {config}")
    step = check_int("step", state["step"], 0)
    rng = curriculum.rng
    rng_state = state["rng"]
    if not isinstance(rng_state, dict) or rng_state.get("bit_generator") != type(rng.bit_generator).__name__:
        raise ValueError(f"the saved generator state does not fit {type(rng.bit_generator).__name__}")
    callbacks = _with_state(curriculum.callbacks)
    callback_states = state["callbacks"]
    if not isinstance(callback_states, list) or len(callback_states) != len(callbacks):
        raise ValueError(f"the state has {len(callback_states)} callback states for {len(callbacks)} callbacks with "
                         "a state")
    for callback in callbacks:
        if not callable(getattr(callback, "load_state_dict", None)):
            raise ValueError(f"the callback {callback!r} cannot load a saved state")
    field_names = {f.name for f in dataclasses.fields(EpochRecord)}
    try:
        history = [
            EpochRecord(**{**record, "selected": np.asarray(record["selected"], dtype=np.int64)})
            for record in state["history"]
        ]
    except (TypeError, KeyError) as error:
        raise ValueError(f"the saved history is not a list of EpochRecords ({sorted(field_names)})") from error
    for callback, callback_state in zip(callbacks, callback_states, strict=True):
        callback.load_state_dict(callback_state)
    rng.bit_generator.state = copy.deepcopy(rng_state)
    curriculum.step = step
    curriculum.history = history


def _with_state(callbacks: list) -> list:
    return [callback for callback, saved in zip(callbacks, saved_callbacks(callbacks), strict=True) if saved]
