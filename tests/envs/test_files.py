"""The atomic writer shared by dataset and result files (``curteach_envs._util``)."""

import os
import stat

import pytest

from curteach_envs._util import atomic_write


def test_text_and_binary_round_trip_with_usual_permissions(tmp_path):
    text = atomic_write(tmp_path / "a" / "note.txt", lambda f: f.write("Ψ ≈ 2.7\n"))
    assert text.read_text(encoding="utf-8") == "Ψ ≈ 2.7\n"
    data = atomic_write(tmp_path / "a" / "blob.bin", lambda f: f.write(b"\x00\x01"), binary=True)
    assert data.read_bytes() == b"\x00\x01"
    mask = os.umask(0)
    os.umask(mask)
    for path in (text, data):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["blob.bin", "note.txt"]


def test_failure_keeps_the_old_file_and_bad_arguments_raise(tmp_path):
    path = atomic_write(tmp_path / "x.txt", lambda f: f.write("old"))

    def broken(stream):
        stream.write("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, broken)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]
    with pytest.raises(ValueError, match="newline applies to text files only"):
        atomic_write(path, lambda f: None, newline="", binary=True)
    with pytest.raises(ValueError):  # an invalid newline: the temporary file is removed, no descriptor leaks
        atomic_write(path, lambda f: None, newline="bad")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]

