"""The test modules stand alone: none imports another test module or a ``conftest.py`` (what two modules share is a
fixture, see ``tests/conftest.py``), with imports inside functions read too."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_names(tree: ast.AST) -> set[str]:
    """The top-level names of every module ``tree`` imports; a relative import as ``.``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else node.module.partition(".")[0])
    return names


def test_no_test_module_imports_another():
    files = sorted(TESTS.rglob("*.py"))
    test_modules = {path.stem for path in files} | {"."}
    assert {"conftest", "test_test_modules"} <= test_modules  # the walk found this folder's modules
    found = {str(path.relative_to(TESTS)): sorted(imported_names(ast.parse(path.read_text())) & test_modules)
             for path in files}
    assert {path: names for path, names in found.items() if names} == {}
