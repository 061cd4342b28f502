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
