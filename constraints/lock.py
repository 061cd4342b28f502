"""Re-resolve the two stacks of docs/installation.md from the package index and write their constraints files.

``make lock`` runs this. Each stack is installed, the way the Makefile installs it, into a scratch virtual environment
with no constraints, so pip picks the newest releases the extras allow, and ``pip freeze`` of it becomes
``constraints/<stack>.txt``:

* ``today``: the extras (and ``metaworld``, which needs Gymnasium >= 1.1) with torch 2.13.0 (CPU) first, then
  ``imitation==1.0.1`` with ``--no-deps`` (its pins, ``gymnasium~=0.29`` and ``stable-baselines3~=2.2.1``, are
  stale);
* ``classic``: the same with the ``classic`` extra, i.e. imitation 1.0.1 with its own pins and dependencies.

The files are for the Python that runs this script (CPython 3.11 on our machines): a few pins, numpy 2.4 among them,
need Python 3.11 or newer.
"""

from __future__ import annotations

import datetime
import platform
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = "datasets,test,docs,ray,tensorboard"
TODAY_EXTRAS = f"{EXTRAS},metaworld"  # metaworld 3.1 needs Gymnasium >= 1.1: today's stack only
TORCH = "torch==2.13.0"
IMITATION = "imitation==1.0.1"
STACKS = {
    "today": (f"teaching,{TODAY_EXTRAS}", True),
    "classic": (f"teaching,classic,{EXTRAS}", False),
}


def _pip(python: Path, *args: str) -> str:
    return subprocess.run([str(python), "-m", "pip", *args], check=True, capture_output=True, text=True).stdout


def freeze(stack: str) -> str:
    """The ``pip freeze`` lines of ``stack`` installed from the index into a scratch environment (torch's local
    version label dropped, so the pin also matches PyPI's wheel of the same release)."""
    extras, imitation_without_deps = STACKS[stack]
    with tempfile.TemporaryDirectory() as scratch:
        venv.create(scratch, with_pip=True)
        python = Path(scratch) / "bin" / "python"
        _pip(python, "install", "-q", "--upgrade", "pip")
        _pip(python, "install", "-q", TORCH)
        _pip(python, "install", "-q", f"{ROOT}[{extras}]")
        if imitation_without_deps:
            _pip(python, "install", "-q", "--no-deps", IMITATION)
        lines = _pip(python, "freeze", "--all", "--exclude", "curteach", "--exclude", "pip").splitlines()
    return "\n".join(line.split("+")[0] if line.startswith("torch==") else line for line in lines) + "\n"


def main(argv: list[str]) -> int:
    """Write ``constraints/<stack>.txt`` for each stack named in ``argv`` (default: both)."""
    stacks = argv or list(STACKS)
    unknown = [name for name in stacks if name not in STACKS]
    if unknown:
        raise ValueError(f"unknown stack {unknown[0]!r}; stacks: {', '.join(STACKS)}")
    for stack in stacks:
        header = (f"# {stack} stack: written by `make lock` (constraints/lock.py) on {datetime.date.today()} with "
                  f"Python {platform.python_version()}; pip install -c this file (docs/installation.md)\n")
        (ROOT / "constraints" / f"{stack}.txt").write_text(header + freeze(stack))
        print(f"constraints/{stack}.txt written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
