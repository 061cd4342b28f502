"""What ``curteach rank`` writes and what an interrupt leaves (issue 55): ``rank.json``'s outputs are paths with their
descriptions apart; a cut within groups draws each group's own cut; a real SIGINT while the outputs are written says
what was and was not written and leaves no ``scores.csv`` of a selection that was not written; one after the last
line does not kill the process by the signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_rank_json_outputs_are_paths_with_what_apart(robot_files, tmp_path, capsys):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", robot_files.reaching_episodes(9, seed=4))
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root), "--score", "length", "--keep", "0.5", "--out", str(out)]) == 0
    outputs = json.loads((out / "rank.json").read_text())["outputs"]
    assert [o["path"] for o in outputs] == [str(out / name) for name in ("episodes.json", "scores.csv", "scores.png")]
    assert all(set(o) == {"path", "what"} and Path(o["path"]).is_file() for o in outputs)  # a script opens them
    assert "LeRobotDataset(..., episodes=json.load(open(path)))" in outputs[0]["what"]
    assert f"  {out / 'episodes.json'}: the kept episode_index values" in capsys.readouterr().out


def test_a_cut_within_groups_draws_each_groups_own_cut(robot_files, tmp_path, monkeypatch):
    """With --per-group each task has its own last kept score: one short line over each task at that score, not one
    line across the plot at the pool's."""
    import matplotlib.axes

    drawn = []
    monkeypatch.setattr(matplotlib.axes.Axes, "axhline", lambda self, y, *a, **k: drawn.append(("across", y)))
    monkeypatch.setattr(matplotlib.axes.Axes, "hlines", lambda self, y, x0, x1, *a, **k: drawn.append((x0, x1, y)))
    episodes = robot_files.reaching_episodes(12, seed=4)
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root), "--score", "length", "--keep", "0.5", "--per-group",
                 "--out", str(out)]) == 0
    kept = set(json.loads((out / "episodes.json").read_text()))
    order = list(dict.fromkeys(ep["task"] for ep in episodes))  # the plot's columns: the tasks as first met
    expected = []
    for j, task in enumerate(order):
        lengths = [len(ep["actions"]) for i, ep in enumerate(episodes) if ep["task"] == task and i in kept]
        expected.append((j - 0.3, j + 0.3, float(max(lengths))))
    assert sorted(drawn) == sorted(expected)


_SLOW = """
import os, signal, sys, time
import curteach_teaching.datasets.curation as curation
from curteach_teaching.datasets.formats import lerobot

def slow(original, name):
    def wrapper(*args, **kwargs):
        if name == os.environ["STOP_AT"]:
            print("STOP", flush=True)
            time.sleep(60)
        return original(*args, **kwargs)
    return wrapper

lerobot.LeRobotFormat.write_kept = slow(lerobot.LeRobotFormat.write_kept, "kept")
curation.plot_scores = slow(curation.plot_scores, "png")
from curteach_teaching.cli import main
code = main()
if os.environ["STOP_AT"] == "end":  # the process between the command's last line and its exit
    print("STOP", flush=True)
    time.sleep(5)
sys.exit(code)
"""


def _interrupted(tmp_path, robot_files, stop_at: str) -> tuple[subprocess.CompletedProcess, Path]:
    """``curteach rank`` on a LeRobot folder in a subprocess, sent a real SIGINT where ``stop_at`` says: in the
    kept share's writer (``kept``), in scores.png's (``png``) or after the command returned (``end``)."""
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", robot_files.reaching_episodes(9, seed=4))
    out = tmp_path / "out"
    out.mkdir()
    (out / "scores.csv").write_text("an earlier ranking's\n")  # a reused folder: its earlier outputs
    (out / "rank.json").write_text("{}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STOP_AT": stop_at, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_SLOW), "rank", "--dataset", str(root), "--score", "length",
         "--keep", "0.5", "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    seen = []
    try:
        for line in process.stdout:
            if line.strip() == "STOP":
                process.send_signal(signal.SIGINT)
                break
            seen.append(line)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    return subprocess.CompletedProcess(process.args, process.returncode, "".join(seen) + stdout, stderr), out


def test_an_interrupt_while_the_kept_share_is_written(robot_files, tmp_path):
    done, out = _interrupted(tmp_path, robot_files, "kept")
    assert done.returncode == 130
    assert done.stderr.splitlines() == [
        "interrupted while writing the kept share (it may be partly written: a robomimic file holds its new key or "
        "is unchanged): wrote nothing; not written: the kept share, scores.csv, scores.png, rank.json; run the same "
        "command again with --overwrite (the kept share may be written)"]
    assert sorted(p.name for p in out.iterdir()) == []  # no scores.csv or rank.json of the earlier ranking either


def test_an_interrupt_while_the_figure_is_written(robot_files, tmp_path):
    done, out = _interrupted(tmp_path, robot_files, "png")
    assert done.returncode == 130
    assert done.stderr.splitlines() == [
        f"interrupted while writing scores.png: wrote {out / 'episodes.json'}, {out / 'scores.csv'}; not written: "
        "scores.png, rank.json; run the same command again with --overwrite (the kept share may be written)"]
    assert sorted(p.name for p in out.iterdir()) == ["episodes.json", "scores.csv"]  # the csv describes the json


def test_an_interrupt_after_the_last_line_does_not_kill_the_process(robot_files, tmp_path):
    done, out = _interrupted(tmp_path, robot_files, "end")
    assert done.returncode == 0, done.stderr  # not -2 (killed by SIGINT): everything was written
    assert done.stderr == "" and done.stdout.splitlines()[-1].startswith("wrote ")
    assert sorted(p.name for p in out.iterdir()) == ["episodes.json", "rank.json", "scores.csv", "scores.png"]
