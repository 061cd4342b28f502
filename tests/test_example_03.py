"""examples/03_curriculum_for_imitation_bc.ipynb runs from top to bottom."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_03_curriculum_for_imitation_bc():
    notebook = nbformat.read(EXAMPLES / "03_curriculum_for_imitation_bc.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    text = "\n".join(output.get("text", "") for output in outputs)
    assert "200 demonstrations of 9 steps" in text
    assert "epoch  1: kept 112 (56%)" in text  # int(0.5 * 200 + min(1, 1 / (0.8 * 10)) * 0.5 * 200)
    assert "| bc/" not in text  # the silent logger
    assert "epoch 10: kept 200 (100%)" in text
    assert any("image/png" in output.get("data", {}) for output in outputs)
    assert "agreement with the expert" in text
