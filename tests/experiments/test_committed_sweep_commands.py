"""The sweeps still computing can be resumed from their pages: each page's ``dataset-bc`` command for a committed
sweep folder is, flag for flag, the command that folder's ``sweep.json`` records (``$R`` being ``/work/mw-runs``,
where the sweeps ran), so running it on a copy of the folder computes only the missing runs."""

import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "experiments"
RESULTS = ROOT / "docs" / "results"
#: where the sweeps ran, as the pages' ``$R``
R = "/work/mw-runs"
#: (page, committed folder, the command's --out under $R)
SWEEPS = [
    ("curation-benchmark.md", "metaworld-operators", "operators"),
    ("curation-benchmark.md", "metaworld-mixed-scores", "mixed-scores"),
    ("metaworld.md", "metaworld-mixed-diffusion", "mixed-diffusion"),
    ("metaworld.md", "metaworld-ladder-diffusion", "ladder-diffusion"),
]


def page_command(page: str, out: str) -> list[str]:
    """The words of the page's one ``curteach dataset-bc`` command writing to ``$R/<out>`` (lines joined as bash
    joins a backslash and a newline, ``$R`` expanded)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    found = [command for block in blocks for command in block.replace("\\\n", "").splitlines()
             if command.startswith("curteach dataset-bc") and command.rstrip().endswith(f"--out $R/{out}")]
    assert len(found) == 1, f"{page}: {len(found)} dataset-bc commands write to $R/{out}"
    return shlex.split(found[0].replace("$R", R))


@pytest.mark.parametrize(("page", "folder", "out"), SWEEPS)
def test_the_page_resumes_the_committed_sweep(page, folder, out):
    recorded = json.loads((RESULTS / folder / "sweep.json").read_text())
    assert page_command(page, out) == recorded["command"]["argv"]
    assert (RESULTS / folder / "runs").is_dir()
