"""A curriculum's saved state: everything of a run but the trainer's policy and optimizer (which torch saves).

The state is plain Python values (``torch.save(..., weights_only=True)`` and JSON can hold it)::

    {"format": tag, "config": {...}, "step": int, "rng": {...}, "history": [{...}, ...], "hooks": [...]}

the curriculum's ``config()`` (what a resumed run must share with the saved one), the global optimizer step, the
state of the batches' generator, the history (:class:`~curteach_teaching.curriculum.selection.EpochRecord` fields as a
dict
per epoch) and the ``state_dict()`` of each hook that has one (``None`` for the others).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.selection import EpochRecord

__all__ = ["STATE_KEYS", "curriculum_state", "load_curriculum_state"]

#: The keys of a saved state.
STATE_KEYS = ("format", "config", "step", "rng", "history", "hooks")


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
        "hooks": [hook.fn.state_dict() if hasattr(hook.fn, "state_dict") else None for hook in curriculum.hooks],
    }


def load_curriculum_state(curriculum: Any, state: dict, state_format: str) -> None:
    """Restore a :func:`curriculum_state` into ``curriculum``: its step, generator, history and hooks' states.

    Nothing is changed unless the whole state fits.

    Raises:
        ValueError: not a state tagged ``state_format``, a state of another configuration, of another generator, or
            with hook states that the hooks cannot take.
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
    hooks = curriculum.hooks
    hook_states = state["hooks"]
    if not isinstance(hook_states, list) or len(hook_states) != len(hooks):
        raise ValueError(f"the state has {len(hook_states)} hook states for {len(hooks)} hooks")
    for hook, hook_state in zip(hooks, hook_states, strict=True):
        if hook_state is not None and not hasattr(hook.fn, "load_state_dict"):
            raise ValueError(f"the hook {hook.fn!r} cannot load a saved state")
    field_names = {f.name for f in dataclasses.fields(EpochRecord)}
    try:
        history = [
            EpochRecord(**{**record, "selected": np.asarray(record["selected"], dtype=np.int64)})
            for record in state["history"]
        ]
    except (TypeError, KeyError) as error:
        raise ValueError(f"the saved history is not a list of EpochRecords ({sorted(field_names)})") from error
    for hook, hook_state in zip(hooks, hook_states, strict=True):
        if hook_state is not None:
            hook.fn.load_state_dict(hook_state)
    rng.bit_generator.state = copy.deepcopy(rng_state)
    curriculum.step = step
    curriculum.history = history
