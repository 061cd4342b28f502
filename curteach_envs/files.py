"""Atomic file writes, shared by the dataset files and the experiments' result files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Callable, Optional, Union

__all__ = ["atomic_write"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(
    path: Union[str, os.PathLike],
    write: Callable[[IO], None],
    newline: Optional[str] = None,
    binary: bool = False,
) -> Path:
    """Write a file atomically: ``write(stream)`` fills a temporary file in the same folder (``.NAME.*.tmp``), which
    is flushed, synced, given the usual permissions (``0o666`` less the umask) and then renamed over ``path``
    (``os.replace``). On any error the temporary file is removed and ``path`` is left as it was. Creates the folder.

    Args:
        path: the file to write.
        write: fills the open stream (UTF-8 text, or bytes with ``binary=True``).
        newline: the text stream's ``newline``; text mode only.
        binary: open the stream in binary mode.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: ``newline`` given with ``binary=True``.
    """
    if binary and newline is not None:
        raise ValueError(f"newline applies to text files only; got newline={newline!r} with binary=True")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)  # reopened by name below, so a failing open cannot leak the descriptor
    try:
        if binary:
            stream = open(temporary, "wb")
        else:
            stream = open(temporary, "w", encoding="utf-8", newline=newline)
        with stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path
