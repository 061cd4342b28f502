"""``dataset-bc`` on a folder of robomimic files (a LIBERO suite: one file per task): every file read, one group
each, and, being a suite of tasks rather than a ladder, the length as the default task score."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("h5py")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402


def test_a_folder_of_robomimic_files_is_read_as_a_suite(robot_files, tmp_path, capsys):
    episodes = robot_files.reaching_episodes(12, seed=2)
    suite = tmp_path / "suite"
    suite.mkdir()
    robot_files.write_robomimic(suite / "open_drawer.hdf5", episodes[:6])
    robot_files.write_robomimic(suite / "close_drawer.hdf5", episodes[6:])
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", str(suite), "--obs-keys", "object,robot0_eef_pos", "--curricula",
                 "Agn,Cur-T", "--runs", "1", "--max-batches", "10", "--eval-every", "10", "--batch-size", "16",
                 "--backend", "serial", "--no-progress", "--no-figures", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["held_out"]["ids"]) == {"close_drawer", "open_drawer"}  # name order, one group per file
    assert report["cell_settings"]["Cur-T"]["task"] == "length"
    assert "task score level" not in capsys.readouterr().out
