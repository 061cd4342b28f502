"""examples/04_navigation_tasks.ipynb runs from top to bottom at the small size (CURTEACH_SMALL=1)."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "04_navigation_tasks.ipynb"


def test_navigation_notebook_runs(monkeypatch):
    monkeypatch.setenv("CURTEACH_SMALL", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    text = "\n".join(o.get("text", "") for o in outputs)
    assert "split sizes: small" in text
    assert "TabularMDP: 145 states, 3 actions" in text
    assert "planner's optimal value" in text and "exact optimum: return" in text
    assert "trajectories; the first has obs" in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2
    assert not any(o.get("output_type") == "error" for o in outputs)
