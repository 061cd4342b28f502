"""Add a filter key ``mask/<name>`` to a robomimic-format file, as robomimic's own scripts do
(``scripts/split_train_val.py``: an array of demonstration names as byte strings), so that robomimic trains on the
subset by naming the key in its training config (``train.hdf5_filter_key``, or ``filter_key`` in a ``train.data``
entry in the versions that list datasets there); its ``split_train_val.py --filter_key <name>`` splits it further.

What "an interrupt cannot damage the file" means here: HDF5 has no transactions, and a process stopped while h5py
writes into a file (Ctrl-C between two of its writes, a full disk, a killed process, a lost machine) can leave the
file's metadata half-written. So the file itself is never opened for writing: the key is added to a copy in the same
folder, the copy is read back and checked, flushed to disk, and then moved over the file with one ``os.replace``,
which the operating system does whole or not at all. Until that moment the file is byte-identical to what it was; an
interrupt at any point removes the copy. The costs: free space for one copy of the file, and the file becomes a new
one with the same contents, permission bits, owner and group (a hard link to the old file keeps the old contents).

The owner and group are given to the copy before it replaces the file, which root can always do and another user only
for a file of their own in one of their groups; where they cannot be kept the key is refused before anything is
written (``--in-place`` writes into the file itself and keeps them). A path that is a symbolic link is followed: the
key goes into the file the link points to (the copy is made in that file's folder), so the link stays a link and
everything else naming that file sees the key, as with ``in_place``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.formats.robomimic_read import (
    demo_names,
    hdf5_open_error,
    read_filter_keys,
    require_h5py,
)

__all__ = ["check_filter_key", "check_key_name", "key_target", "write_filter_key"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def _writable(path: Path) -> bool:
    # the permission bits, not only os.access: root may write anywhere, but a file marked read-only stays unchanged
    mode = path.stat().st_mode
    return os.access(path, os.W_OK) and bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def check_key_name(name: str) -> None:
    """ValueError (one line) unless ``name`` is a filter key's name: letters, digits, ``_``, ``.`` or ``-``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"filter key must be letters, digits, '_', '.' or '-'; got {name!r}")


def key_target(path: str | os.PathLike) -> Path:
    """The file a filter key for ``path`` is written into: ``path`` itself, or the file a symbolic link ``path`` (or a
    link among its folders) points to."""
    return Path(os.path.realpath(Path(path).expanduser()))


def _owner_refusal(path: Path) -> str:
    """``""`` when a copy of ``path`` can be given its owner and group (root; or a file of the invoking user, in one of
    their groups), else why not, in words."""
    if os.geteuid() == 0:
        return ""
    st = path.stat()
    if st.st_uid != os.geteuid():
        return f"it belongs to user {st.st_uid}, and only root can give a file to another user"
    if st.st_gid != os.getegid() and st.st_gid not in os.getgroups():
        return f"its group {st.st_gid} is not one of yours"
    return ""


def check_filter_key(path: str | os.PathLike, name: str, *, overwrite: bool = False, in_place: bool = False) -> None:
    """ValueError (one line) unless ``mask/<name>`` can be added to the robomimic file ``path`` (through a symbolic
    link: the file it points to): a name of letters, digits, ``_``, ``.`` or ``-``; the file readable as robomimic's
    layout, writable, in a writable folder and, unless ``in_place``, one whose owner and group a copy can be given;
    no filter key ``name`` already (unless ``overwrite``). Nothing is written."""
    file_path = key_target(path)
    check_key_name(name)
    if not file_path.is_file():
        raise ValueError(f"no robomimic file at {str(Path(path).expanduser())!r}")
    if not _writable(file_path):
        raise ValueError(f"{str(file_path)!r} is read-only; the filter key {name!r} cannot be added to it")
    if not in_place:
        if not os.access(file_path.parent, os.W_OK | os.X_OK):
            raise ValueError(f"cannot write into {str(file_path.parent)!r}, where the file with its new filter key is "
                             "written before it replaces the old one")
        why = _owner_refusal(file_path)
        if why:
            raise ValueError(f"the file with the filter key {name!r} would replace {str(file_path)!r} under your name: "
                             f"{why}; pass --in-place (writes into the file itself, keeping its owner) or run as its "
                             "owner")
    h5py = require_h5py()
    try:
        with h5py.File(file_path, "r") as file:
            names = demo_names(file)
            existing = read_filter_keys(file, names)
            clash = "mask" in file and name in file["mask"]
    except ValueError as error:
        raise ValueError(f"robomimic file {str(file_path)!r}: {error}") from None
    except OSError as error:
        raise ValueError(hdf5_open_error(file_path, error)) from None
    if (name in existing or clash) and not overwrite:
        raise ValueError(f"{str(file_path)!r} already has the filter key mask/{name}; pass --overwrite to replace it, "
                         "or choose another --filter-key")


def _fsync(path: Path) -> None:
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _keep_owner(path: Path, copy: Path) -> None:
    """Give ``copy`` the owner and group of ``path`` (PermissionError where this user cannot: checked before)."""
    st, mine = path.stat(), copy.stat()
    if (st.st_uid, st.st_gid) != (mine.st_uid, mine.st_gid):
        os.chown(copy, st.st_uid, st.st_gid)


def _verify(path: Path, key: str, demos: list[str]) -> None:
    """The copy opens, its filter key lists ``demos`` and every name is a demonstration."""
    h5py = require_h5py()
    with h5py.File(path, "r") as file:
        names = demo_names(file)
        written = read_filter_keys(file, names).get(key)
        if written is None or sorted(written) != sorted(demos):
            raise ValueError(f"mask/{key} did not read back as written")


def _add_key(file, name: str, demos: list[str]) -> None:
    """``mask/<name>`` (re)written in the open file as robomimic's own scripts encode it (byte strings,
    ``file_utils.create_hdf5_filter_key``), and flushed."""
    key = f"mask/{name}"
    if key in file:
        del file[key]
    file[key] = np.array(demos, dtype="S")
    file.flush()


def _write_in_place(file_path: Path, name: str, demos: list[str]) -> None:
    """The key written into the file itself (``write_filter_key(..., in_place=True)``), flushed, read back, synced."""
    h5py = require_h5py()
    try:
        with h5py.File(file_path, "r+") as file:
            _add_key(file, name, demos)
        _verify(file_path, name, demos)
        _fsync(file_path)
    except (ValueError, OSError, KeyError, TypeError, RuntimeError) as error:
        raise ValueError(f"could not add mask/{name} to {str(file_path)!r} in place: {type(error).__name__}: "
                         f"{' '.join(str(error).split())}; the file may be damaged") from None


def write_filter_key(path: str | os.PathLike, name: str, demos: Sequence[str], *, overwrite: bool = False,
                     in_place: bool = False) -> Path:
    """Add (or, with ``overwrite``, replace) the filter key ``mask/<name>`` listing ``demos`` (names such as
    ``"demo_3"``, each a demonstration of the file), leaving every other object and attribute, the permission bits,
    the owner and the group as they were (see the module docstring for how an interrupt is kept from damaging the
    file, and for a ``path`` that is a symbolic link: its target gets the key).

    ``in_place``: write into the file itself, without the copy, for a file too large to copy (an image dataset of
    tens of GB): no free space is needed and nothing is copied, but an interrupt or a full disk while h5py writes
    the key (a few kilobytes) can leave the file unreadable. The key is read back and checked all the same.

    Returns:
        The path of the file written (a link's target).

    Raises:
        ValueError (one line; the file unchanged): everything :func:`check_filter_key` refuses, a name that is not a
        demonstration, too little free space for the copy, or a failure while writing. ``KeyboardInterrupt`` is
        raised again after the copy is removed, the file unchanged.
    """
    file_path = key_target(path)
    check_filter_key(file_path, name, overwrite=overwrite, in_place=in_place)
    demos = [str(d) for d in demos]
    twice = sorted({d for d in demos if demos.count(d) > 1}) if len(set(demos)) < len(demos) else []
    if twice:
        raise ValueError(f"filter key {name!r} would list {twice[0]} twice; give each demonstration once")
    if not demos:
        raise ValueError(f"filter key {name!r} would be empty: keep at least one demonstration")
    h5py = require_h5py()
    with h5py.File(file_path, "r") as file:
        missing = sorted(set(demos) - set(demo_names(file)))
    if missing:
        raise ValueError(f"{missing[0]} is not a demonstration of {str(file_path)!r}")
    if in_place:
        _write_in_place(file_path, name, demos)
        return file_path
    size = file_path.stat().st_size
    free = shutil.disk_usage(file_path.parent).free
    if free < size + (1 << 20):
        raise ValueError(f"the filter key is added to a copy of the file first: {size / 2**20:.1f} MiB are needed in "
                         f"{str(file_path.parent)!r}, {free / 2**20:.1f} MiB are free; the file is unchanged")
    handle, temporary = tempfile.mkstemp(dir=file_path.parent, prefix=f".{file_path.name}.", suffix=".curteach-tmp")
    os.close(handle)
    copy = Path(temporary)
    try:
        shutil.copyfile(file_path, copy)
        _keep_owner(file_path, copy)  # before the mode: a change of owner may clear the set-id bits
        shutil.copymode(file_path, copy)
        with h5py.File(copy, "r+") as file:
            _add_key(file, name, demos)
        _verify(copy, name, demos)
        _fsync(copy)
        os.replace(copy, file_path)  # whole or not at all: the only moment the file changes
    except ValueError as error:
        raise ValueError(f"could not add mask/{name} to {str(file_path)!r}: {error}; the file is unchanged") from None
    except (OSError, KeyError, TypeError, RuntimeError) as error:
        raise ValueError(f"could not add mask/{name} to {str(file_path)!r}: {type(error).__name__}: "
                         f"{' '.join(str(error).split())}; the file is unchanged") from None
    finally:
        if copy.exists():
            copy.unlink()
    with contextlib.suppress(OSError):  # the rename made durable; a folder that cannot be synced changes nothing
        _fsync(file_path.parent)
    return file_path
