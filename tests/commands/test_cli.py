"""The `curteach` command line."""

import pytest

from curteach_teaching.cli import main


def test_demo_writes_the_road_picture(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--layout-seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "T7   11.421" in out and "T0    4.781" in out
    png = tmp_path / "road.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_bad_gamma_is_a_clean_error(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--gamma", "3"]) == 2
    assert "gamma must be a number in [0, 1]" in capsys.readouterr().err


def test_unknown_command_exits():
    with pytest.raises(SystemExit):
        main(["no-such-command"])


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("curteach 0.")


# --- parse errors: one line and a pointer to --help, exit 2 (not argparse's usage block) --------------------------

@pytest.mark.parametrize("argv, start", [
    (["dataset-bc"], "curteach dataset-bc: error: the following arguments are required: --dataset"),
    (["nav", "--runs", "x"], "curteach nav: error: argument --runs: invalid int value: 'x'"),
    (["make-dataset", "bogus", "--out", "x"], "curteach make-dataset: error: argument SOURCE: invalid choice: 'bogus'"),
    (["demo", "--nope"], "curteach demo: error: unrecognized arguments: --nope"),
    (["car-irl", "--runs", "2", "--nope", "1"], "curteach car-irl: error: unrecognized arguments: --nope 1"),
    (["no-such-command"], "curteach: error: argument COMMAND: invalid choice: 'no-such-command'"),
    (["--nope"], "curteach: error:"),
])
def test_a_parse_error_is_one_line_with_a_pointer_to_help(argv, start, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert stop.value.code == 2 and captured.out == "" and len(lines) == 1, captured.err
    command = "curteach" if start.startswith("curteach:") else " ".join(start.split(":")[0].split()[:2])
    assert lines[0].startswith(start) and lines[0].endswith(f"(see {command} --help)")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_every_sub_command_parses_with_the_one_line_parser():
    from curteach_teaching.cli import OneLineErrorParser, build_parser

    parser = build_parser()
    assert len(parser.commands) >= 16
    assert all(type(sub) is OneLineErrorParser for sub in parser.commands.values())


def test_the_help_names_what_each_command_does_today(capsys):
    from curteach_teaching.cli import build_parser

    parser = build_parser()
    text = parser.format_help()
    line = " ".join(text.split("    make-dataset", 1)[1].split("    dataset-info")[0].split())
    # the sources come from the registry (datasets.sources), not from a sentence that goes stale
    assert all(name in line for name in ("shortest-path", "tsp", "babyai")) and "one compressed file" not in line
    description = parser.commands["dataset-bc"].description
    assert "docs/experiments/dataset-bc.md" in description and "docs/datasets.md" not in description


def test_the_dataset_bc_page_names_the_datasets_extra():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "experiments" / "dataset-bc.md").read_text()
    intro = page.split("## A complete example", 1)[0]
    assert "`datasets` extra" in intro and 'curteach[teaching,datasets]' in intro
