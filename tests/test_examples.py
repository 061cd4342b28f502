"""The example notebooks run from top to bottom (at a small size where they have one)."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_notebook(name: str, timeout: int = 300) -> nbformat.NotebookNode:
    notebook = nbformat.read(EXAMPLES / name, as_version=4)
    NotebookClient(notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}).execute()
    return notebook


def outputs_text(notebook) -> str:
    return "\n".join(
        output.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
    )


def test_01_car_environment():
    notebook = run_notebook("01_car_environment.ipynb")
    text = outputs_text(notebook)
    assert "801 states, 3 actions" in text
    assert "T7: mean  11.421" in text
    assert "total visitation 10.46617" in text
    kinds = [output.get("data", {}).keys() for cell in notebook.cells for output in cell.get("outputs", [])]
    assert any("image/png" in k for k in kinds)  # the road picture
