"""Every use of imitation's private API, in one place, for the imitation release it was written for.

imitation's trainers offer one door for data (``set_demonstrations``) and one for training (``train``). The adapters
need three things more, none of them public in imitation 1.0.1 (BC's step uses its public ``policy``, ``optimizer``
and ``loss_calculator`` only: :mod:`~curteach_teaching.curriculum.adapters.bc`):

* GAIL/AIRL: the discriminator's network, optimizer and step counters are private attributes, needed to save and
  restore a run (:func:`adversarial_state`, :func:`load_adversarial_state`), and the statistics ``train_disc``
  returns are dropped by ``train``, so the instance's ``train_disc`` is wrapped for one call
  (:func:`recording_train_disc`);
* DAgger: a round's folder and the order of its files are private helpers (:func:`dagger_round_paths`).

A different imitation release may have moved any of them: :func:`check_imitation_version` warns once, naming the
release this module was checked against, so that a failure points here.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "WRITTEN_FOR",
    "check_imitation_version",
    "adversarial_state",
    "load_adversarial_state",
    "ADVERSARIAL_STATE_KEYS",
    "recording_train_disc",
    "dagger_round_paths",
]

#: the imitation release whose private attributes this module uses
WRITTEN_FOR = "1.0.1"
_checked = False


def check_imitation_version() -> None:
    """Warn once (``RuntimeWarning``) when the installed imitation is not :data:`WRITTEN_FOR`."""
    global _checked
    if _checked:
        return
    _checked = True
    try:
        installed = metadata.version("imitation")
    except metadata.PackageNotFoundError:  # an imitation on sys.path without metadata: nothing to compare
        return
    if installed != WRITTEN_FOR:
        warnings.warn(f"curteach's trainer adapters use private parts of imitation {WRITTEN_FOR}; imitation "
                      f"{installed} is installed (see curteach_teaching/curriculum/adapters/_imitation_compat.py "
                      "if an adapter fails)", RuntimeWarning, stacklevel=2)


#: the discriminator's part of an adversarial trainer's state (:func:`adversarial_state`)
ADVERSARIAL_STATE_KEYS = ("reward_net", "disc_optimizer", "global_step", "disc_step")


def adversarial_state(trainer: Any) -> dict:
    """The discriminator's network and optimizer states and the step counters of a ``GAIL``/``AIRL`` trainer."""
    return {
        "reward_net": trainer._reward_net.state_dict(),
        "disc_optimizer": trainer._disc_opt.state_dict(),
        "global_step": int(trainer._global_step),
        "disc_step": int(trainer._disc_step),
    }


def load_adversarial_state(trainer: Any, state: dict) -> None:
    """Restore :func:`adversarial_state` into ``trainer``."""
    trainer._reward_net.load_state_dict(state["reward_net"])
    trainer._disc_opt.load_state_dict(state["disc_optimizer"])
    trainer._global_step = state["global_step"]
    trainer._disc_step = state["disc_step"]


@contextlib.contextmanager
def recording_train_disc(trainer: Any, record: Callable[[dict], None]) -> Iterator[None]:
    """Inside the block, every statistics dict ``trainer.train_disc`` returns is passed to ``record`` (imitation's
    ``train`` drops it). A user's own ``train_disc`` on the instance is kept and put back after."""
    own = vars(trainer).get("train_disc")
    original = trainer.train_disc

    def recording(*args, **kwargs):
        stats = original(*args, **kwargs)
        record(stats)
        return stats

    trainer.train_disc = recording
    try:
        yield
    finally:
        if own is None:
            del trainer.train_disc
        else:
            trainer.train_disc = own


def dagger_round_paths(trainer: Any, round_num: int) -> list[Path]:
    """The demonstration files a ``DAggerTrainer`` saved in round ``round_num``, in DAgger's own order (none when
    the round's folder does not exist yet)."""
    folder = trainer._demo_dir_path_for_round(round_num)
    return list(trainer._get_demo_paths(folder)) if folder.is_dir() else []

check_imitation_version()
