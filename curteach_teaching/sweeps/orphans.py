"""Processes that must not outlive the driver that started them.

A driver killed with ``kill -9`` (the out-of-memory killer, a job scheduler) runs no clean-up code, so its helpers
must notice by themselves:

* :func:`die_with_parent` (called first thing in a pool worker): on Linux the kernel sends the worker ``SIGKILL``
  when its parent exits (``prctl(PR_SET_PDEATHSIG)``); elsewhere a daemon thread checks every half second whether
  the parent is still the one that started it. Either way the worker ends without a traceback.
* :class:`Reaper` (for a local Ray instance): Ray's own processes (its GCS, raylet, agents and workers) are started
  by Ray, not by us, and some of them linger after the driver is gone. Every process started while
  ``CURTEACH_REAPER_TOKEN`` is in the environment inherits it; a small watcher process waits on a pipe from the
  driver and, when the pipe closes (the driver exited in any way), kills every process whose environment holds the
  token. Reading other processes' environments needs ``/proc`` (Linux); elsewhere the reaper is a no-op. If the driver
  ended without leaving the reaper's block (killed, or ended by a library's C code, as Ray's core does when its
  local raylet dies), the watcher also prints the reaper's ``epitaph`` line on stderr, since the driver cannot.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

__all__ = ["Reaper", "die_with_parent", "processes_with_token"]

#: the environment variable that marks the processes a :class:`Reaper` kills
TOKEN_VARIABLE = "CURTEACH_REAPER_TOKEN"
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """End this process (``SIGKILL``, so without a traceback) as soon as ``parent_pid``, its parent, is gone."""
    import signal

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                # the parent may have died before the request took effect
                if os.getppid() != parent_pid:
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="curteach-parent-watch", daemon=True).start()


def processes_with_token(token: str) -> list[int]:
    """PIDs of the live processes whose environment holds ``CURTEACH_REAPER_TOKEN=token`` (empty without
    ``/proc``)."""
    needle = f"{TOKEN_VARIABLE}={token}".encode() + b"\0"
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes() + b"\0":
                found.append(int(entry.name))
        except OSError:  # gone, or another user's
            continue
    return found


# The watcher loads this file alone (standard library only), before it waits: importing the curteach package there
# would take seconds (numpy, the experiments) between the driver's death and the clean-up.
_WATCHER = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("curteach_orphans", sys.argv[3])
orphans = importlib.util.module_from_spec(spec)
spec.loader.exec_module(orphans)
ended = sys.stdin.buffer.read()  # returns when the driver closes the pipe or exits
for _ in range(3):  # processes may still be starting children
    for pid in orphans.processes_with_token(sys.argv[1]):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
if not ended.endswith(b"done") and sys.argv[2]:  # the driver died inside the block: it could not say so itself
    sys.stderr.write(sys.argv[2] + "\\n")
"""


class Reaper:
    """Kill, when the driver exits in any way, every process started within ``with Reaper():``.

    Inside the block ``CURTEACH_REAPER_TOKEN`` is set in this process's environment, so the processes started there
    (and their descendants) carry it. On leaving the block the variable is removed and the watcher is told to
    clean up at once; if the driver dies inside the block, the watcher's pipe closes and it cleans up then, and
    prints ``epitaph`` (one line, if given) on the driver's stderr.
    """

    def __init__(self, epitaph: str = ""):
        self.token = uuid.uuid4().hex
        self.epitaph = epitaph
        self._watcher: subprocess.Popen | None = None
        self._previous: str | None = None

    def __enter__(self) -> Reaper:
        if Path("/proc").is_dir():
            environment = {key: value for key, value in os.environ.items() if key != TOKEN_VARIABLE}
            # its own session: the terminal's Ctrl-C must not end the watcher before the driver is done
            self._watcher = subprocess.Popen(
                [sys.executable, "-c", _WATCHER, self.token, self.epitaph, __file__], stdin=subprocess.PIPE,
                env=environment,
                stdout=subprocess.DEVNULL, stderr=None if self.epitaph else subprocess.DEVNULL, start_new_session=True,
            )
        self._previous = os.environ.get(TOKEN_VARIABLE)
        os.environ[TOKEN_VARIABLE] = self.token
        return self

    def __exit__(self, *exc_info) -> None:
        if self._previous is None:
            os.environ.pop(TOKEN_VARIABLE, None)
        else:
            os.environ[TOKEN_VARIABLE] = self._previous
        if self._watcher is not None:
            try:
                self._watcher.stdin.write(b"done")  # a clean exit: clean up without an epitaph
                self._watcher.stdin.close()
            except OSError:  # the watcher is gone already
                pass
            try:
                self._watcher.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._watcher.kill()
