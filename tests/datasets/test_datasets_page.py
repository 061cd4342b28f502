"""docs/datasets.md: its example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "datasets.md"


def test_the_example_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], str(PAGE), "exec"), {"__name__": "docs_example"})
    assert (tmp_path / "my-datasets" / "cartpole" / "scripted-v0" / "data" / "metadata.json").is_file()
    assert capsys.readouterr().out.startswith("cartpole/scripted-v0 (0, 1, 2, 3) [")
