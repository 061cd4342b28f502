"""``curteach rank`` and the files around a dataset (issue 55): a robomimic file given through a symbolic link keeps
the link and its target gets the key, in both modes; another user's file keeps its owner."""

from __future__ import annotations

import os
import stat

import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

KEYS = "object,robot0_eef_pos"


def _kept(path) -> list[str]:
    with h5py.File(path, "r") as f:
        return sorted(n.decode() for n in f["mask/curated"][()])


@pytest.mark.parametrize("in_place", [False, True])
def test_a_dataset_given_through_a_link_writes_its_target(robot_files, tmp_path, capsys, in_place):
    episodes = robot_files.reaching_episodes(9, seed=4)
    target = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    link = tmp_path / "configs" / "dataset.hdf5"
    link.parent.mkdir()
    link.symlink_to(target)
    assert main(["rank", "--dataset", str(link), "--obs-keys", KEYS, "--score", "worse", "--keep", "0.67",
                 "--out", str(tmp_path / "out"), *(["--in-place"] if in_place else [])]) == 0
    assert f"note: {link} is a symbolic link: mask/curated was written into the file it points to, {target}" in (
        capsys.readouterr().out)
    assert link.is_symlink() and link.resolve() == target
    assert _kept(target) == sorted(f"demo_{i}" for i, ep in enumerate(episodes) if ep["quality"] != "worse")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "mh.hdf5", "out"]  # no private copy, no leftover


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="a file of another user and group can only be made (and kept so) by root")
def test_another_users_file_keeps_its_owner(robot_files, tmp_path):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(9, seed=4))
    os.chown(path, 12345, 23456)
    os.chmod(path, 0o640)
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "worse", "--keep", "0.67",
                 "--out", str(tmp_path / "out")]) == 0
    st = path.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (12345, 23456, 0o640)
    assert len(_kept(path)) == 6
