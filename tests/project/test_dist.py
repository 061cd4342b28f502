"""The distribution: the sdist and wheel build and pass ``twine check``; the wheel carries every module of both
packages, their ``py.typed`` and the license, and works installed into a fresh virtual environment; ``LICENSE``,
``CHANGELOG.md`` and ``CITATION.cff`` are what their formats ask for.

The fresh environment of :func:`test_wheel_works_in_a_fresh_virtual_environment` has no pip and no packages of its
own: the wheel goes in with ``--no-deps``, and a ``.pth`` file lends it this environment's site-packages for the
dependencies (numpy, gymnasium, ...). A ``.pth`` line only adds a folder to ``sys.path``; the ``.pth`` files inside
that folder, among them the editable install's finder for this checkout, are not run. So ``curteach_envs`` can only
come from the wheel, which the test checks by path. Installing the dependencies from PyPI as well is the job of
``tests/project/test_dist_envs.py`` (slow, needs the network).
"""

from __future__ import annotations

import email
import json
import re
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from datetime import date
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("curteach_envs", "curteach_teaching")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
#: the packages that only the ``teaching`` extra brings; the base install must not ask for them
TEACHING_ONLY = ("torch", "stable-baselines3", "matplotlib", "seals")


@pytest.fixture(scope="module")
def distributions(tmp_path_factory, build_distributions):
    return build_distributions(tmp_path_factory.mktemp("dist"))


def module_files(root: Path) -> set[str]:
    """Every ``.py`` file of :data:`PACKAGES` under ``root``, relative to it."""
    return {p.relative_to(root).as_posix() for package in PACKAGES for p in (root / package).rglob("*.py")}


def test_twine_check_passes(distributions):
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, distributions)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_wheel_contents(distributions):
    _, wheel = distributions
    assert wheel.name == f"curteach-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"curteach-{VERSION}.dist-info"
        metadata = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        license_text = archive.read(f"{info}/licenses/LICENSE").decode()
    # every module of the checkout ships (a folder without __init__.py would be left out silently)
    assert module_files(ROOT) <= names, sorted(module_files(ROOT) - names)
    assert {f"{package}/py.typed" for package in PACKAGES} <= names
    assert license_text == (ROOT / "LICENSE").read_text()
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Requires-Python"] == PYPROJECT["project"]["requires-python"]
    base = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    base_names = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in base}
    assert base_names == {"numpy", "scipy", "gymnasium", "tqdm"}, base
    teaching = [r for r in metadata.get_all("Requires-Dist") if 'extra == "teaching"' in r]
    for name in TEACHING_ONLY:
        assert any(r.startswith(name) for r in teaching), (name, teaching)
    assert "teaching" in metadata.get_all("Provides-Extra")
    # imitation's pins would hold Gymnasium at 0.29: only the classic extra asks for it (docs/installation.md)
    assert not any(r.startswith("imitation") for r in teaching), teaching
    assert 'imitation==1.0.1; extra == "classic"' in metadata.get_all("Requires-Dist")
    assert "[gymnasium.envs]\n__root__ = curteach_envs:register_envs" in entry_points
    assert "[console_scripts]\ncurteach = curteach_teaching.cli:main" in entry_points


def test_sdist_contents(distributions):
    sdist, _ = distributions
    top = f"curteach-{VERSION}"
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "CITATION.cff", "PKG-INFO"):
        assert name in names, name
    assert {f"{package}/py.typed" for package in PACKAGES} <= names
    assert module_files(ROOT) <= names, sorted(module_files(ROOT) - names)


def test_wheel_works_in_a_fresh_virtual_environment(distributions, tmp_path, clean_environment,
                                                     venv_site_packages):
    _, wheel = distributions
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = venv_site_packages(env_dir)
    # the dependencies from this environment; its curteach (editable, pointing at the checkout) is not reachable
    (site / "dependencies_from_the_test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        capture_output=True, text=True, check=True, env=clean_environment(),
    )
    env = clean_environment()
    run = {"capture_output": True, "text": True, "cwd": tmp_path, "env": env}
    version = subprocess.run([str(env_dir / "bin" / "curteach"), "--version"], **run)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"curteach {VERSION}"
    code = """
import importlib.metadata, importlib.resources, json
import gymnasium as gym
# Gymnasium 0.29 registers the bare id through the package's entry point; 1.x loads none (the module form)
env = gym.make("CarTeach-v0" if gym.__version__.startswith("0.") else "curteach_envs:CarTeach-v0")
observation, _ = env.reset(seed=0)
import curteach_envs, curteach_teaching
packages = ("curteach_envs", "curteach_teaching")
print(json.dumps({
    "envs": curteach_envs.__file__,
    "teaching": curteach_teaching.__file__,
    "typed": [importlib.resources.files(p).joinpath("py.typed").is_file() for p in packages],
    "version": importlib.metadata.version("curteach"),
    "states": env.unwrapped.tabular().n_states,
    "in_space": bool(env.observation_space.contains(observation)),
}))
"""
    result = subprocess.run([str(env_dir / "bin" / "python"), "-c", code], **run)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("envs", "teaching"):
        assert Path(found[key]).resolve().is_relative_to(site.resolve()), found[key]
    assert found["typed"] == [True, True]
    assert found["version"] == VERSION
    assert found["states"] == 801 and found["in_space"]


# ----------------------------------------------------------------------------------------- license, changelog, citation


def test_license_is_mit_as_pyproject_says():
    text = (ROOT / "LICENSE").read_text()
    assert PYPROJECT["project"]["license"] == "MIT"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    assert text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) \d{4} The curteach authors$", text, re.MULTILINE)
    assert "WITHOUT WARRANTY OF ANY KIND" in text


#: Keep a Changelog 1.1.0: the kinds of change a release lists
CHANGE_KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def changelog_sections(text: str) -> list[tuple[str, str | None, list[str]]]:
    """``(version, date or None, [kinds of change])`` per ``## [...]`` heading of a Keep-a-Changelog file.

    Raises:
        ValueError: a heading or a kind of change that the format does not have.
    """
    sections: list[tuple[str, str | None, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            match = re.fullmatch(r"## \[(Unreleased|\d+\.\d+\.\d+)\](?: - (\d{4}-\d{2}-\d{2}))?", line)
            if match is None:
                raise ValueError(f"not a release heading: {line!r}")
            sections.append((match.group(1), match.group(2), []))
        elif line.startswith("### "):
            kind = line[4:].strip()
            if kind not in CHANGE_KINDS or not sections:
                raise ValueError(f"not a kind of change: {line!r}")
            sections[-1][2].append(kind)
    return sections


def test_changelog_in_the_keep_a_changelog_form():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    assert "keepachangelog.com" in text
    sections = changelog_sections(text)
    assert sections[0][0] == "Unreleased" and sections[0][1] is None
    releases = sections[1:]
    assert releases, "no released version"
    versions = [tuple(int(x) for x in version.split(".")) for version, _, _ in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    for version, day, kinds in releases:
        assert day is not None, f"{version} has no date"
        date.fromisoformat(day)
        assert kinds and len(set(kinds)) == len(kinds), (version, kinds)
    assert VERSION in [version for version, _, _ in releases]


def test_changelog_checker_refuses_other_headings():
    with pytest.raises(ValueError, match="release heading"):
        changelog_sections("## 0.1.0\n")
    with pytest.raises(ValueError, match="kind of change"):
        changelog_sections("## [0.1.0] - 2026-11-22\n### Improvements\n")


def read_citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


#: the required keys of the Citation File Format 1.2.0 schema: at the top and in a reference (preferred-citation)
CFF_REQUIRED = ("cff-version", "message", "title", "authors")
CFF_REFERENCE_REQUIRED = ("type", "title", "authors")


def test_citation_cff():
    cff = read_citation()
    for key in CFF_REQUIRED:
        assert key in cff, key
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software"
    assert str(cff["version"]) == VERSION
    assert cff["license"] == PYPROJECT["project"]["license"]
    for author in cff["authors"]:
        assert "name" in author or "family-names" in author, author
    paper = cff["preferred-citation"]
    for key in CFF_REFERENCE_REQUIRED:
        assert key in paper, key
    assert paper["type"] == "conference-paper"
    assert paper["title"] == "Curriculum Design for Teaching via Demonstrations: Theory and Applications"
    assert [(a["given-names"], a["family-names"]) for a in paper["authors"]] == [
        ("Gaurav", "Yengera"),
        ("Rati", "Devidze"),
        ("Parameswaran", "Kamalaruban"),
        ("Adish", "Singla"),
    ]
    assert paper["year"] == 2021 and paper["volume"] == 34
    assert "NeurIPS 2021" in paper["collection-title"]


@pytest.mark.slow
def test_citation_cff_validates_with_cffconvert(tmp_path, clean_environment):
    """cffconvert (the Citation File Format's own validator, against the 1.2.0 JSON schema) in its own environment:
    it pins an older jsonschema than the documentation tools use. Needs PyPI."""
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    env = clean_environment()
    subprocess.run([python, "-m", "pip", "install", "-q", "cffconvert==2.0.0"], check=True, env=env)
    result = subprocess.run(
        [str(env_dir / "bin" / "cffconvert"), "--validate", "--infile", str(ROOT / "CITATION.cff")],
        capture_output=True, text=True, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid" in result.stdout.lower(), result.stdout
