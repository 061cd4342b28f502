"""``curteach report DIR``: a sweep folder's report from the command line it records, no flags repeated."""

import json
import shutil

import pytest

from curteach_teaching.cli import main
from curteach_teaching.commands.report import report_command

SWEEP = ["car-bc", "--runs", "2", "--steps", "40", "--backend", "serial", "--no-progress", "--no-figures",
         "--out", "results/cb"]


@pytest.fixture
def swept(tmp_path, monkeypatch):
    """A finished car-bc sweep run from ``tmp_path/work`` with a relative ``--out``; its folder."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(SWEEP) == 0
    monkeypatch.chdir(tmp_path)
    return work / "results" / "cb"


def test_report_reruns_the_recorded_command_from_its_working_folder(swept, tmp_path, capsys):
    record = json.loads((swept / "sweep.json").read_text())
    assert record["command"] == {"argv": ["curteach", *SWEEP], "cwd": str(tmp_path / "work")}
    summary = (swept / "summary.csv").read_bytes()
    runs = sorted((path.name, path.read_bytes()) for path in (swept / "runs").rglob("run_*.json"))
    (swept / "summary.csv").unlink()
    (swept / "report.json").unlink()
    capsys.readouterr()
    assert main(["report", "work/results/cb", "--no-figures"]) == 0  # from another folder, a relative path
    out = capsys.readouterr().out
    expected = ["curteach", "car-bc", "--runs", "2", "--steps", "40", "--report-only", "--out", str(swept)]
    assert f"(in {tmp_path / 'work'})" in out and " ".join(expected) in out
    assert "report of the 2 of 2 runs saved so far" in out
    assert (swept / "summary.csv").read_bytes() == summary  # the same report, and nothing recomputed
    assert sorted((path.name, path.read_bytes()) for path in (swept / "runs").rglob("run_*.json")) == runs
    assert json.loads((swept / "report.json").read_text())["command"] == ["curteach", *SWEEP]  # what made the runs
    assert json.loads((swept / "sweep.json").read_text()) == record  # a report writes no record


def test_a_moved_folder_is_reported_where_it_is_now(swept, tmp_path, capsys):
    moved = tmp_path / "elsewhere"
    shutil.copytree(swept, moved)
    (moved / "summary.csv").unlink()
    assert main(["report", str(moved), "--no-figures"]) == 0
    assert (moved / "summary.csv").read_bytes() == (swept / "summary.csv").read_bytes()
    shutil.rmtree(tmp_path / "work")  # its recorded working folder gone: the command runs from here
    capsys.readouterr()
    assert main(["report", str(moved), "--no-figures"]) == 0
    assert "recorded working folder" in capsys.readouterr().out


def test_resuming_with_other_placement_flags_records_the_new_line_and_the_same_sweep(swept, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "work")
    before = json.loads((swept / "sweep.json").read_text())
    again = [*SWEEP[:5], "--workers", "1", *SWEEP[5:]]
    assert main(again) == 0
    after = json.loads((swept / "sweep.json").read_text())
    assert after["command"]["argv"] == ["curteach", *again]
    assert {key: value for key, value in after.items() if key != "command"} == {
        key: value for key, value in before.items() if key != "command"}


def test_dry_run_prints_and_writes_nothing(swept, capsys):
    (swept / "summary.csv").unlink()
    assert main(["report", str(swept), "--dry-run"]) == 0
    assert "--report-only --out" in capsys.readouterr().out
    assert not (swept / "summary.csv").exists()


def test_an_older_folder_falls_back_to_the_command_its_report_records(swept, capsys):
    record = json.loads((swept / "sweep.json").read_text())
    del record["command"]
    (swept / "sweep.json").write_text(json.dumps(record))
    assert main(["report", str(swept), "--dry-run"]) == 0  # report.json's line has no working folder
    assert "by its recorded command:" in capsys.readouterr().out
    (swept / "report.json").unlink()
    assert main(["report", str(swept)]) == 2
    assert "records no command" in capsys.readouterr().err


def test_a_folder_that_is_no_sweep_is_one_line_exit_2(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"curteach report: error: {tmp_path} is not a sweep's folder (it has no sweep.json)"]
    (tmp_path / "sweep.json").write_text(json.dumps({"command": {"argv": ["curteach", "nosuch"], "cwd": None}}))
    assert main(["report", str(tmp_path)]) == 2
    assert "which is not a curteach command" in capsys.readouterr().err


def test_report_command_drops_what_a_report_does_not_do():
    argv = ["curteach", "dataset-bc", "--dataset", "d.hdf5", "--out=x", "--workers", "2", "--overwrite",
            "--log-dir", "logs", "--log-format=csv", "--no-figures", "--backend", "ray", "--ray-address", "a:1",
            "--gpus-per-run", "0.5", "--device", "cuda", "--lr", "0.1", "--report-only", "--no-progress"]
    assert report_command(argv, "/f") == ["curteach", "dataset-bc", "--dataset", "d.hdf5", "--device", "cuda",
                                          "--lr", "0.1", "--report-only", "--out", "/f"]


def test_flags_after_the_folder_go_to_the_recorded_command(swept, capsys):
    assert main(["report", str(swept), "--no-figures"]) == 0
    assert all(not name.endswith((".png", ".pdf")) for name in json.loads((swept / "report.json").read_text())["files"])
    capsys.readouterr()
    assert main(["report", str(swept), "--steps", "30"]) == 2  # a setting: another sweep's report, refused
    err = capsys.readouterr().err
    assert "holds a sweep of other settings" in err and err.count("\n") == 1


def test_runs_of_cells_the_command_does_not_name_are_noted(swept, capsys):
    shutil.copytree(swept / "runs" / "main", swept / "runs" / "other")  # as a later command's cell would be
    assert main(["report", str(swept), "--no-figures"]) == 0
    assert f"note: {swept} also holds runs of other, which this command does not name" in capsys.readouterr().out


def test_the_refusal_names_the_recorded_working_folder(swept, tmp_path, capsys):
    assert main([*SWEEP[:3], "--steps", "30", *SWEEP[5:-1], str(swept)]) == 2  # other settings, from elsewhere
    err = capsys.readouterr().err
    assert f"repeat its command: curteach {' '.join(SWEEP)} (from {tmp_path / 'work'}); to report it" in err


def test_a_cuda_report_without_a_gpu_says_how(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["dataset-bc", "--dataset", "x", "--device", "cuda", "--report-only", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "a report trains nothing" in err and "add --device cpu" in err and err.count("\n") == 1
