"""Environment ids that Gymnasium renamed between 0.29 and 1.x, so that one spelling serves both lines.

Gymnasium 1.0 registers ``CliffWalking-v1`` (an optional slippery cliff) in place of ``CliffWalking-v0``, and 1.3
``Taxi-v4`` (fixed rainy and fickle-passenger options) in place of ``Taxi-v3``; with the default arguments each
pair is the same MDP. :func:`registered_id` turns either spelling into the one the installed Gymnasium registers,
and :func:`check_registered_id` turns a spelling it does not register into one line naming the one it does
(Gymnasium's own error for it comes with a deprecation warning and, on 0.29, does not say the id was renamed).
"""

from __future__ import annotations

import gymnasium as gym

__all__ = ["RENAMED", "check_registered_id", "registered_id"]

#: Gymnasium 0.29's id -> the id a Gymnasium 1.x release gave the same environment
RENAMED = {"CliffWalking-v0": "CliffWalking-v1", "Taxi-v3": "Taxi-v4"}
_OLD_NAME = {new: old for old, new in RENAMED.items()}


def _counterpart(env_id: str) -> str | None:
    return RENAMED.get(env_id) or _OLD_NAME.get(env_id)


def registered_id(env_id: str) -> str:
    """``env_id`` as the installed Gymnasium registers it: the id itself when registered, else its renamed
    counterpart in :data:`RENAMED` (either way round) when that is registered, else the id unchanged.

    ``registered_id("CliffWalking-v0")`` is ``"CliffWalking-v1"`` on Gymnasium 1.x and ``"CliffWalking-v0"`` on 0.29.
    """
    other = _counterpart(env_id)
    if env_id not in gym.registry and other is not None and other in gym.registry:
        return other
    return env_id


def check_registered_id(env_id: str) -> None:
    """Refuse an id of :data:`RENAMED` that the installed Gymnasium knows by its other name.

    Raises:
        ValueError: ``env_id`` is not registered and its counterpart is, e.g. ``CliffWalking-v0`` on Gymnasium 1.x
            (the message names the id to use).
    """
    other = registered_id(env_id)
    if other == env_id:
        return
    renamed = "renamed it" if RENAMED.get(env_id) == other else "still calls it"
    raise ValueError(f"{env_id} is not registered by the installed Gymnasium {gym.__version__}, which {renamed} "
                     f"{other}; use {other}")
