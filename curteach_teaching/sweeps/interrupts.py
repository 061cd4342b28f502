"""Ctrl-C and SIGTERM for long commands: the first signal stops cleanly, a second one stops at once.

The ``curteach`` command installs :func:`handle_interrupts` for its whole run. The first Ctrl-C raises
:class:`KeyboardInterrupt` as usual, so the sweep stops its backend, keeps every finished run and says so; the first
``SIGTERM`` (what a batch scheduler such as Slurm sends before it kills a job, or a plain ``kill``) raises
:class:`Terminated`, a ``KeyboardInterrupt``, so that it takes the same way out, and the command exits with 143
(128 + SIGTERM) instead of 130. Without it, Python's default for SIGTERM ends the process at once: no line saying
what was saved, and the workers are left to notice their driver's death. A further signal during that clean-up
does not raise again (a second exception in the middle of a clean-up can escape every
handler and end the process with a traceback, or by the signal itself): it prints the sweep's line if the sweep has
not printed it yet, kills every process this one started (pool workers, a local Ray instance), and exits with code
130 (143 after a SIGTERM) at once. Finished runs are safe either way: each was written atomically before the press.

Library code does not install anything: a notebook or a caller of :func:`~curteach_teaching.experiments.run_sweep`
keeps its own Ctrl-C handling and gets a plain :class:`KeyboardInterrupt`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: the exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells report it
EXIT_CODE = 130


class Terminated(KeyboardInterrupt):
    """The first ``SIGTERM`` within :func:`handle_interrupts`. A ``KeyboardInterrupt``, so that every clean-up
    written for Ctrl-C runs for it too; the command exits with :attr:`exit_code`."""

    exit_code = 128 + signal.SIGTERM


_presses = 0
#: the signal that stopped the command (the first one received), or None
_stopped_by: int | None = None
#: registered messages, innermost last, each with whether it was printed
_messages: list[list] = []


def announce() -> None:
    """Print the innermost registered interruption message to stderr, unless it was printed already."""
    if _messages and not _messages[-1][1]:
        _messages[-1][1] = True
        line = _messages[-1][0]()
        if _stopped_by == signal.SIGTERM:  # a scheduler's log should say why the job stopped
            line += " (stopped by SIGTERM)"
        print(line, file=sys.stderr, flush=True)


@contextmanager
def interruption_message(message: Callable[[], str]) -> Iterator[None]:
    """Register ``message`` (called when needed, so it can count what is saved by then) as the line to print if
    the command is interrupted within the block; :func:`announce` prints it once."""
    entry = [message, False]
    _messages.append(entry)
    try:
        yield
    finally:
        _messages.remove(entry)


def _descendants() -> list[int]:
    """PIDs of every process below this one (from ``/proc``; elsewhere only multiprocessing's children)."""
    me = os.getpid()
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        import multiprocessing

        return [child.pid for child in multiprocessing.active_children() if child.pid is not None]
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # the command may hold spaces and parentheses, so the fields are read after the last ')'
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, stack = [], [me]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def stop_now() -> None:
    """Print the interruption message (once), kill every descendant process, exit with :data:`EXIT_CODE` (128 +
    SIGTERM where a SIGTERM stopped the command)."""
    announce()
    for pid in _descendants():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
    sys.stderr.flush()
    os._exit(128 + (_stopped_by or signal.SIGINT))  # EXIT_CODE after Ctrl-C


def _on_signal(signum, frame) -> None:
    global _presses, _stopped_by
    _presses += 1
    if _presses == 1:
        _stopped_by = signum
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt
    stop_now()


@contextmanager
def handle_interrupts(exiting: bool = False) -> Iterator[None]:
    """Within the block, the first SIGINT raises :class:`KeyboardInterrupt`, the first SIGTERM :class:`Terminated`,
    and a further one of either calls :func:`stop_now`. Nothing is installed outside the main thread, and a signal
    that is ignored stays ignored (a background job of a non-interactive shell ignores SIGINT, and so does this
    block then; it still stops cleanly on SIGTERM).

    After an interruption both signals stay ignored on leaving the block, since the process is about to exit: a
    signal during interpreter shutdown (where Python's own handlers are gone) would otherwise kill it by the
    signal, with no exit code of its own. ``exiting``: the process ends when the block does (the ``curteach``
    program), so they stay ignored whatever happened: a Ctrl-C after the command's last line, with everything
    written, would otherwise kill it by the signal."""
    global _presses, _stopped_by
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    handled = [number for number, handler in previous.items() if handler is not signal.SIG_IGN]
    _presses, _stopped_by = 0, None
    for number in handled:
        signal.signal(number, _on_signal)
    try:
        yield
    finally:
        for number in handled:
            signal.signal(number, signal.SIG_IGN if _presses or exiting else previous[number])
