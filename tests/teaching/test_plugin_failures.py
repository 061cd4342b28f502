"""A plug-in teacher whose select raises: one line naming the plug-in and the exception, exit code 2, and its
traceback in the output folder's errors.log (on every backend)."""

from __future__ import annotations

import pytest

from curteach_teaching.cli import main
from curteach_teaching.registry import PluginError

BROKEN = '''
class Broken:
    name = "Broken"

    def __init__(self, context):
        self.starts = context.start_states

    def select(self, view, step):
        if step == 2:
            raise ZeroDivisionError("my teacher divides by zero")
        return int(self.starts[0])
'''


@pytest.mark.parametrize("backend", ["serial", "processes"])
def test_a_raising_plugin_teacher_is_one_line_and_a_log(tmp_path, monkeypatch, capsys, backend):
    (tmp_path / "broken_teacher.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    code = main(["teach", "--env", "FrozenLake-v1", "--teachers", "Agn,broken_teacher:Broken", "--runs", "2",
                 "--steps", "4", "--workers", "2", "--backend", backend, "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert "teacher 'Broken' raised ZeroDivisionError in select at step 2: my teacher divides by zero" in err
    assert str(out / "errors.log") in err
    log = (out / "errors.log").read_text()
    assert "Traceback" in log and "broken_teacher.py" in log and "my teacher divides by zero" in log


def test_plugin_error_keeps_its_line_and_traceback_across_pickling():
    import pickle

    error = pickle.loads(pickle.dumps(PluginError("teacher 'X' raised KeyError", "Traceback ...")))
    assert str(error) == "teacher 'X' raised KeyError" and error.details == "Traceback ..."
    assert isinstance(error, ValueError)
