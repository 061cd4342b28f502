"""Dataset formats as registered classes: the built-ins detect what the string switch did, and a fourth format,
the ``.npz`` example of docs/extending.md ("A dataset format"), registered as the page says, is read by ``read_pool``
and ranked, cut and written by ``curteach rank`` with no command knowing it."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets import read_pool  # noqa: E402
from curteach_teaching.datasets.formats import FORMATS, field_hint, format_of, load_format  # noqa: E402
from curteach_teaching.registry import PluginError  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
#: the episodes of the test's file: id -> length (written out of id order, read back in it)
LENGTHS = {4: 6, 0: 5, 1: 2, 2: 7, 3: 3, 5: 4}


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert "\n## A dataset format\n" in text
    return text.split("\n## A dataset format\n", 1)[1].split("\n## ", 1)[0]


@pytest.fixture
def npz_format(monkeypatch):
    """The page's format, registered for this test only."""
    section = _section()
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    namespace = {"__name__": "docs_dataset_format"}
    exec(compile(code, f"{PAGE}: A dataset format", "exec"), namespace)
    assert '"curteach.formats"]\nnpz = "mypkg.formats:NpzFormat"' in section
    monkeypatch.setitem(FORMATS._builtins, "npz", lambda: namespace["NpzFormat"])
    return namespace["NpzFormat"]


def _write_npz(path: Path) -> Path:
    rng = np.random.default_rng(0)
    arrays = {}
    for episode, length in LENGTHS.items():
        arrays[f"obs_{episode}"] = rng.normal(size=(length + 1, 3))
        arrays[f"acts_{episode}"] = rng.normal(size=(length, 2))
    np.savez(path, **arrays)
    return path


def test_the_built_in_formats_and_their_order():
    assert FORMATS.names()[:3] == ("robomimic", "lerobot", "minari")
    assert [load_format(name).name for name in ("robomimic", "lerobot", "minari")] == ["robomimic", "lerobot",
                                                                                     "minari"]
    assert format_of("some/minari-id-v0").name == "minari"  # the fallback: nothing else claims an id
    assert format_of("file.h5").name == "robomimic"
    # a task score naming LeRobot's column gets the field's name; another name, nothing
    assert field_hint("next.success", ["success", "length"]) == " (LeRobot's next.success is the field 'success')"
    assert field_hint("next.success", ["length"]) == "" and field_hint("success", ["success"]) == ""


def test_a_registered_object_that_is_no_format_is_refused(monkeypatch):
    monkeypatch.setitem(FORMATS._builtins, "broken", lambda: object)
    with pytest.raises(PluginError, match=r"^dataset format 'broken' is object, not a DatasetFormat"):
        load_format("broken")


def test_the_page_format_is_read_by_read_pool(npz_format, tmp_path):
    path = _write_npz(tmp_path / "demos.npz")
    assert format_of(path).name == "npz" and format_of(str(path)).name == "npz"
    pool = read_pool(path)
    assert pool.episode_ids.tolist() == [0, 1, 2, 3, 4, 5] and pool.group_names == ("demos",)
    assert pool.lengths.tolist() == [LENGTHS[i] for i in range(6)]
    assert pool.observation_space.shape == (3,) and pool.action_space.shape == (2,)
    with pytest.raises(ValueError, match=r"a \.npz of episodes has no observation keys$"):
        read_pool(path, obs_keys=["x"])


def test_rank_cuts_and_writes_the_page_format(npz_format, tmp_path, capsys, monkeypatch):
    """The page's commands: the kept half written in the format's terms, then the same command refused."""
    _write_npz(tmp_path / "demos.npz")
    monkeypatch.chdir(tmp_path)
    (shown,) = re.findall(r"```text\n(.*?)```", _section(), flags=re.S)
    sessions = re.findall(r"^\$ curteach (.*)\n((?:[^$].*\n)*)", shown, flags=re.M)
    assert len(sessions) == 2
    command, expected = sessions[0]
    assert main(command.split()) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(expected)
    report = json.loads((tmp_path / "ranked" / "rank.json").read_text())
    assert report["format"] == "npz" and report["kept"] == 3
    rows = list(csv.DictReader(open(tmp_path / "ranked" / "scores.csv")))
    assert [r["name"] for r in rows] == ["0", "1", "2", "3", "4", "5"]
    kept = read_pool(tmp_path / "ranked" / "curated.npz")  # the three shortest, read back by the same format
    assert kept.episode_ids.tolist() == [1, 3, 5] and kept.lengths.tolist() == [2, 3, 4]
    assert {"path": "ranked/curated.npz", "what": "3 episodes, read_pool reads it"} == report["outputs"][0]

    command, expected = sessions[1]
    assert main(command.split()) == 2
    assert capsys.readouterr().err == expected


def test_rank_asks_the_format_about_its_sources(npz_format, tmp_path, capsys):
    one, two = _write_npz(tmp_path / "a.npz"), _write_npz(tmp_path / "b.npz")
    assert main(["rank", "--dataset", f"{one},{two}", "--score", "length"]) == 2
    assert capsys.readouterr().err.strip().endswith("rank writes one .npz of kept episodes for one .npz file: give "
                                                    "one at a time")
    assert main(["rank", "--dataset", f"{one},some/minari-v0", "--score", "length"]) == 2
    assert f"--dataset mixes formats ({one}: npz, some/minari-v0: minari); rank one format at a time" in \
        capsys.readouterr().err
