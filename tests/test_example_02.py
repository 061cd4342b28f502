"""Execute examples/02_teaching_maxent_irl.ipynb at a small size."""

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "02_teaching_maxent_irl.ipynb"


def test_example_02_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("CURTEACH_EXAMPLE_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(
        output.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
    )
    assert "expert's expected reward" in outputs
    assert "T0: mean score     0.00" in outputs
    assert "summary.csv" in outputs
