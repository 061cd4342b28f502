"""The dataset-source registry and make-dataset's sub-commands, with a source of the test's own: its flags only, its
check before any work, what it wrote, a plug-in that fails to load, and Ctrl-C."""

from __future__ import annotations

import argparse

import pytest

from curteach_teaching.cli import main
from curteach_teaching.datasets.sources import SOURCES, DatasetSource, load_source, sources


class Counting(DatasetSource):
    """Writes one text file with ``--count`` lines."""

    name = "counting"
    summary = "a test's own source: one file of numbers"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--count", type=int, default=3)

    def check(self, args: argparse.Namespace) -> None:
        if args.count < 1:
            raise ValueError(f"count must be an integer >= 1; got {args.count}")

    def generate(self, args: argparse.Namespace, *, progress: bool) -> list[str]:
        if args.count == 99:
            raise KeyboardInterrupt  # as a Ctrl-C in the middle of the work
        args.out.write_text("".join(f"{args.seed + i}\n" for i in range(args.count)))
        return [str(args.out)]


@pytest.fixture
def counting(monkeypatch):
    monkeypatch.setitem(SOURCES._builtins, "counting", Counting)  # a class: made without arguments
    monkeypatch.setitem(SOURCES._builtins, "broken", lambda: (_ for _ in ()).throw(ImportError("no such thing")))


def test_the_built_ins_are_sources():
    assert SOURCES.names()[:3] == ("shortest-path", "tsp", "babyai")
    for name in ("shortest-path", "tsp", "babyai"):
        source = load_source(name)
        assert isinstance(source, DatasetSource) and source.name == name and source.summary


def test_a_registered_source_gets_a_sub_command_with_its_own_flags(counting, tmp_path, capsys):
    out = tmp_path / "numbers.txt"
    assert main(["make-dataset", "counting", "--count", "2", "--seed", "5", "--out", str(out)]) == 0
    assert out.read_text() == "5\n6\n"
    assert "make-dataset counting (seed 5) wrote 1 in" in capsys.readouterr().out
    assert main(["make-dataset", "counting", "--count", "0", "--out", str(tmp_path / "no.txt")]) == 2
    assert capsys.readouterr().err.strip().endswith("--count must be an integer >= 1; got 0")  # the flag's name
    with pytest.raises(SystemExit):
        main(["make-dataset", "counting", "--levels", "GoToLocal", "--out", str(tmp_path / "no.txt")])
    assert "unrecognized arguments: --levels GoToLocal" in capsys.readouterr().err
    assert not (tmp_path / "no.txt").exists()


def test_a_source_that_fails_to_load_is_listed_and_refused_in_one_line(counting, tmp_path, capsys):
    listed = {name: error for name, _, error in sources()}
    assert "ImportError: no such thing" in listed["broken"] and listed["counting"] == ""
    with pytest.raises(SystemExit):
        main(["make-dataset", "--help"])
    assert "broken: (fails to load:" in " ".join(capsys.readouterr().out.split())
    assert main(["make-dataset", "broken", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "dataset source 'broken'" in err


def test_ctrl_c_says_what_was_kept(counting, tmp_path, capsys):
    assert main(["make-dataset", "counting", "--count", "99", "--out", str(tmp_path / "x")]) == 130
    assert capsys.readouterr().err.strip() == "interrupted: make-dataset counting wrote nothing; run the same " \
                                              "command again"


class Plain:
    """A source that does not subclass DatasetSource: the three methods are enough."""

    summary = "duck-typed"

    def add_arguments(self, parser):
        pass

    def check(self, args):
        pass

    def generate(self, args, *, progress):
        raise KeyboardInterrupt


def test_a_duck_typed_source_runs_and_gets_the_generic_interrupt_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(SOURCES._builtins, "plain", Plain)
    assert main(["make-dataset", "plain", "--out", str(tmp_path / "x")]) == 130
    assert capsys.readouterr().err.strip() == "interrupted: make-dataset plain wrote nothing"


def test_write_staged_replaces_whole_datasets_or_none(tmp_path):
    """The sources' shared writer: every dataset written beside the old ones, then moved over them; a failure part-way
    leaves the old ones as they were and no staging folder."""
    from curteach_teaching.datasets.sources.base import write_staged

    targets = {key: tmp_path / f"set-{key}" for key in ("a", "b")}
    targets["a"].mkdir()
    (targets["a"] / "old").write_text("old")

    def write(key, staging):
        if key == "b" and fail:
            raise OSError("disk full")
        (staging / targets[key].name).mkdir(parents=True)
        (staging / targets[key].name / "new").write_text(key)

    fail = True
    with pytest.raises(OSError, match="disk full"):
        write_staged(tmp_path, "test", targets, write)
    assert [p.name for p in tmp_path.iterdir()] == ["set-a"] and (targets["a"] / "old").is_file()
    fail = False
    write_staged(tmp_path, "test", targets, write)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set-a", "set-b"]
    assert [p.name for p in targets["a"].iterdir()] == ["new"] and (targets["b"] / "new").read_text() == "b"
