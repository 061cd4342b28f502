"""Atomic file writes, shared by the dataset files and the experiments' result files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Callable, Optional, Union

__all__ = ["atomic_write"]


def atomic_write(
    path: Union[str, os.PathLike],
    write: Callable[[IO], None],
    newline: Optional[str] = None,
    binary: bool = False,
) -> Path:
    """Write a file atomically: ``write(stream)`` fills a temporary file in the same folder (``.NAME.*.tmp``), which
    is flushed, synced and then renamed over ``path`` (``os.replace``). On any error the temporary file is removed
    and ``path`` is left as it was. Creates the folder.

    Args:
        path: the file to write.
        write: fills the open stream.
        newline: the text stream's ``newline`` (text mode only).
        binary: open the stream in binary mode.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") if binary else os.fdopen(handle, "w", newline=newline) as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path
