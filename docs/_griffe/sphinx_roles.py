"""A Griffe extension for the API pages: Sphinx roles in our docstrings become links.

The docstrings write cross-references as Sphinx roles (``:func:`log_difficulty```,
``:class:`~curteach_envs.TabularMDP```), which Markdown would show verbatim. This extension rewrites each role into
an *optional* mkdocs-autorefs reference: a link where the target is documented on the site, plain code where it is
not, and never a warning, so the strict build does not depend on which names the API pages happen to render.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`(?P<target>[^`]+)`")
_TITLED = re.compile(r"(?P<title>[^<]+)<(?P<target>[^>]+)>")
_PATH = re.compile(r"\.?[A-Za-z_][\w.]*")


def _full_path(obj: griffe.Object, target: str) -> str:
    """The full dotted path of ``target`` as seen from ``obj``'s scope (``target`` itself if unresolvable)."""
    target = target.lstrip(".")
    head = target.split(".", 1)[0]
    try:
        resolved = obj.resolve(head)
    except Exception:  # noqa: BLE001 -- unresolvable names stay as written
        return target
    return resolved + target[len(head):]


def rewrite(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs reference."""

    def replace(match: re.Match) -> str:
        target = match["target"].strip()
        titled = _TITLED.fullmatch(target)  # the explicit-title form: "title <target>"
        if titled:
            shown, target = titled["title"].strip(), titled["target"].strip()
        else:
            shown = None
        short = target.startswith("~")
        target = target.lstrip("~")
        if not _PATH.fullmatch(target):
            return f"<code>{shown or target}</code>"
        if shown is None:
            shown = target.rsplit(".", 1)[-1] if short else target
        return f'<autoref identifier="{_full_path(obj, target)}" optional><code>{shown}</code></autoref>'

    return _ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring once the object tree is complete."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring in place."""
        if obj.docstring is not None and ":`" in obj.docstring.value:
            obj.docstring.value = rewrite(obj, obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite a top-level package's own docstring (``on_object`` covers its members)."""
        self.on_object(obj=pkg)
