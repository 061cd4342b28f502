"""A command that needs the teaching extra names it in one line when it is not installed."""

import subprocess
import sys


def test_missing_teaching_stack_is_one_line(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from curteach_teaching.cli import main; "
            f"sys.exit(main(['car-irl', '--runs', '1', '--steps', '1', '--workers', '1', '--no-progress', "
            f"'--out', {str(tmp_path / 'out')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "curteach car-irl: error: this command needs the teaching layer (matplotlib is not installed); install it "
        "with pip install 'curteach[teaching]'"
    ]


def test_other_missing_modules_are_not_disguised():
    code = "\n".join([
        "import argparse",
        "from curteach_teaching import cli",
        "def build_parser():",
        "    parser = argparse.ArgumentParser()",
        "    sub = parser.add_subparsers(dest='command')",
        "    def fail(args):",
        "        raise ModuleNotFoundError('no module', name='nosuchthing')",
        "    sub.add_parser('x').set_defaults(func=fail)",
        "    return parser",
        "cli.build_parser = build_parser",
        "try:",
        "    cli.main(['x'])",
        "except ModuleNotFoundError as error:",
        "    print('raised', error.name)",
    ])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "raised nosuchthing" in done.stdout, done.stderr


def test_a_bare_curteach_prints_the_help(capsys):
    from curteach_teaching.cli import main

    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: curteach") and "dataset-bc" in out and "car-irl" in out


def test_progress_bars_only_on_a_terminal(monkeypatch):
    import argparse
    import io
    import sys

    from curteach_teaching.commands.sweep_options import progress_wanted

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a log file: no bars
    assert not progress_wanted(argparse.Namespace(no_progress=False))
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert progress_wanted(argparse.Namespace(no_progress=False))
    assert not progress_wanted(argparse.Namespace(no_progress=True))
