"""Fixtures of the project checks: building the distributions and running children outside the checkout.

``test_dist.py`` and ``test_dist_envs.py`` both build the sdist and wheel and run interpreters that must not see the
checkout; the helpers live here, and each reaches a test through the fixture of the same name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: what the build reads: the copy in a temporary folder keeps the build's own files (build/, *.egg-info) out of the
#: checkout, which other processes may be importing from at the same time
DIST_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "CITATION.cff", "MANIFEST.in",
                "curteach_envs", "curteach_teaching")


def copy_sources(target: Path) -> Path:
    """Copy :data:`DIST_SOURCES` of the checkout into ``target`` (without byte code); returns ``target``."""
    target.mkdir(parents=True)
    for name in DIST_SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)
    return target


def _build_distributions(work: Path) -> tuple[Path, Path]:
    """Build the sdist, then the wheel from it (``python -m build``), from a copy of the checkout in ``work``.

    ``--no-isolation`` uses this environment's setuptools instead of downloading one, so the build runs offline;
    ``make dist`` builds with isolation. Returns ``(sdist, wheel)``.
    """
    source = copy_sources(work / "src")
    out = work / "dist"
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def _clean_environment() -> dict[str, str]:
    """This process's environment without what could let a child import from the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _venv_site_packages(venv_dir: Path) -> Path:
    """The site-packages folder of the virtual environment ``venv_dir``."""
    out = subprocess.run(
        [str(venv_dir / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, env=_clean_environment(),
    )
    return Path(out.stdout.strip())


@pytest.fixture(scope="session")
def build_distributions():
    """``build_distributions(work) -> (sdist, wheel)``, built from a copy of the checkout under ``work``."""
    return _build_distributions


@pytest.fixture(scope="session")
def clean_environment():
    """``clean_environment()``: a new dict of this process's environment without ``PYTHONPATH`` and the like."""
    return _clean_environment


@pytest.fixture(scope="session")
def venv_site_packages():
    """``venv_site_packages(venv_dir)``: the site-packages folder of that virtual environment."""
    return _venv_site_packages
