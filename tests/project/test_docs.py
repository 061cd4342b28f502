"""The documentation: the site builds strictly, the README's links and snippets work, nothing points outside it."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

# Markdown links and images: [text](target) or ![alt](target "title").
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# Built by concatenation so that this file does not match itself: paths a clone does not have, and citations by
# section number of the description of the original code we worked from (which is not in the repository either);
# the code cites a docs page instead.
_OUTSIDE = ("../" + "shared", "DEVELOPERS" + ".md", "spec" + "/", "car_driving" + ".md")
_OUTSIDE_CITATION = re.compile(
    r"\b(?:navigation|teaching|car_driving)\.md,? (?:Sections? |§ ?)?\d"
    r"|\b" + "spec" + r"(?:'s)? (?:Sections? |§ ?)?\d"
)


def _repo_files() -> list[Path]:
    """The files a clone holds: tracked and untracked-but-not-ignored (every file outside .git without git)."""
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, check=True,
        ).stdout.decode()
        return [ROOT / name for name in listing.split("\0") if name and (ROOT / name).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [path for path in ROOT.rglob("*") if path.is_file() and ".git" not in path.relative_to(ROOT).parts]


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_docs_build_strictly(tmp_path):
    missing = [name for name in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
               if importlib.util.find_spec(name.split(".")[0]) is None]
    if missing:
        pytest.skip(f"the docs tools are not installed ({', '.join(missing)}); pip install -e '.[docs]'")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "api" / "index.html").is_file()


def test_readme_links_resolve():
    targets = _LINK.findall(README.read_text(encoding="utf-8"))
    local = [target for target in targets if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]
    assert local, "the README should link into the docs"
    broken = [target for target in local if not (README.parent / target.split("#", 1)[0]).is_file()]
    assert not broken, f"README links to files that do not exist: {broken}"


def test_the_docs_say_how_to_serve_the_built_site():
    """The built site's pages link to folders (MkDocs' directory URLs), so from disk they open folder listings: both
    places that say how to build it say how to serve it."""
    for page in (README, ROOT / "docs" / "installation.md"):
        text = page.read_text(encoding="utf-8")
        assert "python -m http.server -d site" in text and "mkdocs serve" in text, page.name


#: pages that quote what a trained network did: its digits come from the CPU's arithmetic, and the page must say so
MACHINE_DEPENDENT = ("experiments/nav.md", "experiments/car-trainers.md", "experiments/dataset-bc.md",
                     "experiments/babyai.md", "extending.md")


@pytest.mark.parametrize("page", MACHINE_DEPENDENT)
def test_numbers_that_depend_on_the_cpu_are_labelled(page):
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    assert "CPU's floating-point arithmetic" in text, f"{page} quotes trained networks' numbers without saying so"
    if page == "experiments/nav.md":  # the demo's table: both machines, and the spread between them
        assert "**−2.01 / −2.85**" in text and "0.22 (Cur) to 0.84 (Agn)" in text


def test_readme_has_one_figure_and_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    assert len(re.findall(r"!\[[^\]]*\]\(", text)) == 1
    assert "make demo" in text and "make test" in text


def test_readme_snippets_run(tmp_path):
    blocks = _python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) == 3
    printed = {0: "2.973", 2: "(5, 400)"}  # what the snippets' comments promise
    for i, block in enumerate(blocks):
        run = subprocess.run(
            [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=600,
            env=dict(os.environ, MPLBACKEND="Agg"),
        )
        assert run.returncode == 0, f"README snippet {i + 1} failed:\n{block}\n{run.stderr[-3000:]}"
        assert printed.get(i, "") in run.stdout
        if i == 2:  # the curriculum's snippet prints its one line: no logger tables of imitation, no torch warning
            assert run.stdout.strip() == "(5, 400)" and not run.stderr.strip(), run.stdout[-2000:] + run.stderr


def test_nothing_points_outside_the_repository():
    offenders = []
    for path in _repo_files():
        data = path.read_bytes()
        for needle in _OUTSIDE:
            if needle.encode() in data:
                offenders.append(f"{path.relative_to(ROOT)}: {needle}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # a binary file
            continue
        offenders += [f"{path.relative_to(ROOT)}: {match.group()!r}" for match in _OUTSIDE_CITATION.finditer(text)]
    assert not offenders, "files cite paths a clone does not have:\n" + "\n".join(offenders)


def test_the_statistics_page_reads_a_real_report():
    """docs/statistics.md's report.json snippet runs against the committed dataset-bc report and prints, per cell,
    its final difference and then the lines the command printed (the keys it reads are the ones reports write)."""
    page = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    blocks = [block for block in _python_blocks(page) if "json.load" in block]
    assert len(blocks) == 1
    run = subprocess.run([sys.executable, "-c", blocks[0]], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    paired = json.loads((ROOT / "docs" / "results" / "dataset-bc-pendulum" / "report.json").read_text())["paired"]
    expected = [f"{cell} - Agn: final {stats['final']['mean_difference']:+.3g} [{stats['final']['ci_low']:.3g}, "
                f"{stats['final']['ci_high']:.3g}], p {stats['final']['wilcoxon_p']}, {stats['runs']} runs"
                for cell, stats in paired["statistics"].items()]
    assert expected and run.stdout.splitlines() == expected + paired["lines"]
    assert 'report["paired_statistics"]' not in page
