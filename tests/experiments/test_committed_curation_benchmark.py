"""The curation-score benchmark page (docs/experiments/curation-benchmark.md) shows the committed ``rank --compare``
results: every row of each of its comparison tables is the committed ``compare.json``'s, formatted as the page
formats it, and every score of the file has its row."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "experiments" / "curation-benchmark.md"
RESULTS = ROOT / "docs" / "results"
#: a table's heading on the page names its folder under docs/results
HEADING = re.compile(r"\*\*`rank --compare`, `docs/results/([\w.-]+)/`\*\*")


def _number(value, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def row_of(name: str, row: dict) -> list[str]:
    """The page's cells of one score: name, AUROC, Spearman with length, the share of length's kept set, the
    residual's AUROC, the fit's seconds."""
    return [f"`{name}`", _number(row["auroc"], ".3f"), _number(row["spearman_length"], "+.3f"),
            _number(row["kept_overlap_length"], ".0%"), _number(row["residual_auroc"], ".3f"),
            _number(row["seconds"], ".1f")]


def _tables(text: str) -> dict[str, list[list[str]]]:
    """``folder -> rows`` of every table that follows a heading of :data:`HEADING`."""
    tables = {}
    for match in HEADING.finditer(text):
        rows = []
        after = text[match.end():].split("\n", 1)[1]  # the table starts below the heading's line
        for line in after.lstrip("\n").splitlines():
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.split("|")[1:-1]]
            if cells and not set(cells[0]) <= set("-: ") and cells[0] != "score":
                rows.append(cells)
        tables[match.group(1)] = rows
    return tables


def test_the_page_has_comparison_tables():
    tables = _tables(PAGE.read_text(encoding="utf-8"))
    assert set(tables) >= {"rank-compare-operators", "rank-compare-metaworld-mixed-scores"}
    assert all(tables.values())


@pytest.mark.parametrize("folder", ["rank-compare-operators", "rank-compare-metaworld-mixed-scores"])
def test_each_table_is_its_committed_compare_json(folder):
    rows = _tables(PAGE.read_text(encoding="utf-8"))[folder]
    report = json.loads((RESULTS / folder / "compare.json").read_text())
    assert rows == [row_of(name, row) for name, row in report["scores"].items()]
