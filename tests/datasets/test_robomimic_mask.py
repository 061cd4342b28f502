"""A filter key added to a robomimic-format file: robomimic's encoding, nothing else changed, and a file that stays
byte-identical whenever the key is refused or the write is interrupted."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("imitation")


from curteach_teaching.datasets import read_robomimic  # noqa: E402
from curteach_teaching.datasets.formats import robomimic_mask  # noqa: E402
from curteach_teaching.datasets.formats.robomimic_mask import check_filter_key, write_filter_key  # noqa: E402


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def contents(path) -> dict:
    """Every object's path -> (its data or None for a group, its attributes), read with h5py."""
    found = {}
    with h5py.File(path, "r") as f:
        found["/"] = (None, {k: np.asarray(v).tolist() for k, v in f.attrs.items()})

        def visit(name, item):
            data = item[()].tolist() if isinstance(item, h5py.Dataset) else None
            dtype = str(item.dtype) if isinstance(item, h5py.Dataset) else None
            found[name] = (data, dtype, {k: np.asarray(v).tolist() for k, v in item.attrs.items()})

        f.visititems(visit)
    return found


@pytest.fixture
def file(robot_files, tmp_path):
    return robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(9, seed=3))


def test_adds_the_key_and_changes_nothing_else(file):
    before = contents(file)
    mode = stat.S_IMODE(file.stat().st_mode)
    write_filter_key(file, "curated", ["demo_1", "demo_4", "demo_8"])
    after = contents(file)
    assert after.pop("mask/curated") == ([b"demo_1", b"demo_4", b"demo_8"], "|S6", {})
    assert after == before
    assert stat.S_IMODE(file.stat().st_mode) == mode
    assert [p.name for p in file.parent.iterdir()] == [file.name]  # no copy left behind
    pool = read_robomimic(file, ["object"])
    assert [m["curated"] for m in pool.metadata] == [i in (1, 4, 8) for i in range(9)]


def test_in_place_writes_the_same_key_into_the_file_itself(file, monkeypatch):
    before = contents(file)
    inode = file.stat().st_ino

    def no_copy(*_):
        raise AssertionError("in place copies nothing")

    monkeypatch.setattr(robomimic_mask.shutil, "copyfile", no_copy)
    monkeypatch.setattr(robomimic_mask.shutil, "disk_usage", no_copy)  # and needs no free space
    write_filter_key(file, "curated", ["demo_1", "demo_4", "demo_8"], in_place=True)
    after = contents(file)
    assert after.pop("mask/curated") == ([b"demo_1", b"demo_4", b"demo_8"], "|S6", {})
    assert after == before and file.stat().st_ino == inode  # the same file, not a replacement
    write_filter_key(file, "curated", ["demo_2"], overwrite=True, in_place=True)
    assert contents(file)["mask/curated"][0] == [b"demo_2"]


def test_existing_key_refused_unless_overwrite(file):
    write_filter_key(file, "curated", ["demo_1"])
    digest = sha256(file)
    with pytest.raises(ValueError, match="already has the filter key mask/curated; pass --overwrite"):
        write_filter_key(file, "curated", ["demo_2"])
    with pytest.raises(ValueError, match="already has the filter key mask/worse"):
        check_filter_key(file, "worse")
    assert sha256(file) == digest
    before = contents(file)
    write_filter_key(file, "curated", ["demo_2", "demo_3"], overwrite=True)
    after = contents(file)
    assert after.pop("mask/curated")[0] == [b"demo_2", b"demo_3"]
    before.pop("mask/curated")
    assert after == before


def test_bad_input_leaves_the_file_byte_identical(file, tmp_path):
    digest = sha256(file)
    for name, demos, message in [
        ("a/b", ["demo_1"], "filter key must be letters"),
        ("", ["demo_1"], "filter key must be letters"),
        ("curated", ["demo_99"], "demo_99 is not a demonstration"),
        ("curated", [], "would be empty"),
        ("curated", ["demo_1", "demo_2", "demo_1"], "would list demo_1 twice"),
    ]:
        with pytest.raises(ValueError, match=message):
            write_filter_key(file, name, demos)
    assert sha256(file) == digest
    with pytest.raises(ValueError, match="no robomimic file"):
        write_filter_key(tmp_path / "missing.hdf5", "curated", ["demo_1"])
    os.chmod(file, 0o444)
    try:
        with pytest.raises(ValueError, match="is read-only"):
            write_filter_key(file, "curated", ["demo_1"])
    finally:
        os.chmod(file, 0o644)
    assert sha256(file) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mh.hdf5"]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError(28, "No space left on device")])
def test_an_interrupt_while_writing_leaves_the_file_byte_identical(file, monkeypatch, stop):
    digest = sha256(file)
    written = []

    def interrupted(path, key, demos):  # after the key is written into the copy, before it replaces the file
        with h5py.File(path, "r") as f:
            written.append(f"mask/{key}" in f)
        raise stop

    monkeypatch.setattr(robomimic_mask, "_verify", interrupted)
    if stop is KeyboardInterrupt:
        with pytest.raises(KeyboardInterrupt):
            write_filter_key(file, "curated", ["demo_1"])
    else:
        with pytest.raises(ValueError, match="could not add mask/curated .*No space left on device; the file is "
                                             "unchanged"):
            write_filter_key(file, "curated", ["demo_1"])
    assert written == [True]  # the interrupt came mid-way, with the key already in the copy
    assert sha256(file) == digest
    assert [p.name for p in file.parent.iterdir()] == [file.name]


def test_too_little_space_is_refused_before_copying(file, monkeypatch):
    import collections

    digest = sha256(file)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(robomimic_mask.shutil, "disk_usage", lambda _: usage(10, 10, 1000))
    with pytest.raises(ValueError, match="MiB are needed .* the file is unchanged"):
        write_filter_key(file, "curated", ["demo_1"])
    assert sha256(file) == digest


def test_a_locked_file_is_said_to_be_locked_not_damaged(tmp_path):
    from curteach_teaching.datasets.formats.robomimic_read import hdf5_open_error

    locked = OSError("[Errno 11] Unable to synchronously open file (unable to lock file, errno = 11, error message = "
                     "'Resource temporarily unavailable')")
    assert hdf5_open_error(tmp_path / "a.hdf5", locked).startswith(
        f"cannot read {str(tmp_path / 'a.hdf5')!r}: another process has it open for writing (HDF5 locks such a file)")
    assert "as HDF5 (damaged, or not an HDF5 file?)" in hdf5_open_error(tmp_path / "a.hdf5", OSError("bad magic"))


def test_a_truncated_file_is_said_to_be_damaged_not_locked(file):
    """HDF5's truncated-file message holds "sblock->base_addr": the file is named damaged, not locked by another
    process (a real file cut short, read by the reader and by the filter key's check)."""
    from curteach_teaching.datasets.formats.robomimic_read import hdf5_open_error

    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])
    for call in (lambda: read_robomimic(file, ["object"]), lambda: check_filter_key(file, "curated")):
        with pytest.raises(ValueError) as caught:
            call()
        message = str(caught.value)
        assert "sblock" in message and "truncated file" in message  # HDF5's own words, kept for the curious
        assert "damaged, cut short" in message and "another process" not in message and "lock" not in message.replace(
            "sblock", "")
    locked = OSError("Unable to synchronously open file (unable to lock file, errno = 11, error message = 'Resource "
                     "temporarily unavailable')")
    assert "another process has it open for writing" in hdf5_open_error(file, locked)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="a file of another user and group can only be made (and kept so) by root")
def test_the_rewritten_file_keeps_its_owner_group_and_mode(file):
    os.chown(file, 12345, 23456)  # another user's file, readable by its group only
    os.chmod(file, 0o640)
    write_filter_key(file, "curated", ["demo_1", "demo_4"])
    st = file.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (12345, 23456, 0o640)
    assert contents(file)["mask/curated"][0] == [b"demo_1", b"demo_4"]


def test_a_file_whose_owner_a_copy_cannot_keep_is_refused_unless_in_place(file, monkeypatch):
    """Another user's file, as a user who is not root: the copy would be the user's own, so the key is refused before
    anything is written; --in-place writes into the file itself and keeps the owner."""
    digest = sha256(file)
    monkeypatch.setattr(os, "geteuid", lambda: file.stat().st_uid + 1)
    with pytest.raises(ValueError, match=r"would replace .* under your name: it belongs to user \d+, and only root "
                                         r"can give a file to another user; pass --in-place"):
        write_filter_key(file, "curated", ["demo_1"])
    assert sha256(file) == digest and [p.name for p in file.parent.iterdir()] == [file.name]
    check_filter_key(file, "curated", in_place=True)  # the file itself keeps its owner


@pytest.mark.parametrize("in_place", [False, True])
def test_a_link_stays_a_link_and_its_target_gets_the_key(file, tmp_path, in_place):
    shared = tmp_path / "shared"
    shared.mkdir()
    target = file.rename(shared / "mh.hdf5")
    link = tmp_path / "mine.hdf5"
    link.symlink_to(Path("shared") / "mh.hdf5")  # relative, as a link made beside its target often is
    before = contents(target)
    assert write_filter_key(link, "curated", ["demo_2", "demo_5"], in_place=in_place) == target
    assert link.is_symlink() and link.resolve() == target
    after = contents(target)
    assert after.pop("mask/curated")[0] == [b"demo_2", b"demo_5"]
    assert after == before
    assert sorted(p.name for p in shared.iterdir()) == ["mh.hdf5"]  # the copy was made, and removed, beside the target
