"""The plug-in registry: built-ins, module:attr, entry points, and the errors a user sees."""

import textwrap

import pytest

from curteach_teaching.registry import Registry, display_name


@pytest.fixture
def plugin_dir(fake_distribution):
    """A package ``myplug`` and a distribution declaring entry points for it."""
    return fake_distribution("myplug", {
        "myplug/__init__.py": textwrap.dedent("""
            class Greedy:
                name = "Greedy-v2"
            def plain():
                return 42
            def broken():
                raise RuntimeError("boom")
            helpers = type("NS", (), {"inner": staticmethod(plain)})
        """),
        "myplug/bad.py": "raise ImportError('missing dependency xyz')\n",
    }, "[curteach.tests]\nGreedyEP = myplug:Greedy\nPlainEP = myplug:plain\nBadEP = myplug.bad:thing\n")


def make_registry() -> Registry:
    registry = Registry("teacher", "curteach.tests")
    registry.add("Agn", lambda: "agn-object")
    registry.add("Cur", lambda: "cur-object")
    return registry


def test_builtins_in_order_and_by_name():
    registry = make_registry()
    assert registry.names() == ("Agn", "Cur")
    assert registry.load("Cur") == ("Cur", "cur-object")
    assert registry.load(" Agn ") == ("Agn", "agn-object")


def test_builtins_are_loaded_lazily():
    calls = []
    registry = Registry("teacher", "curteach.tests")
    registry.add("Lazy", lambda: calls.append(1) or "x")
    assert registry.names() == ("Lazy",) and calls == []
    registry.load("Lazy")
    assert calls == [1]


def test_register_decorator():
    registry = Registry("curriculum", "curteach.tests")

    @registry.register("Mine")
    def mine(log_teacher, log_learner):
        return log_learner

    assert registry.load("Mine") == ("Mine", mine)


@pytest.mark.parametrize("name", ["", "a:b", "a,b", None])
def test_bad_builtin_names(name):
    with pytest.raises(ValueError, match="non-empty string"):
        Registry("teacher", "g").add(name, lambda: 1)


def test_duplicate_builtin():
    registry = make_registry()
    with pytest.raises(ValueError, match="'Cur' is registered already"):
        registry.add("Cur", lambda: 1)


def test_unknown_name_lists_names_and_how_to_register():
    with pytest.raises(ValueError) as info:
        make_registry().load("Nope")
    message = str(info.value)
    assert "unknown teacher 'Nope'" in message
    assert "available: Agn, Cur" in message
    assert "module:attr" in message and "'curteach.tests'" in message


def test_module_attr_uses_the_name_attribute_else_the_attribute_name(plugin_dir):
    registry = make_registry()
    name, obj = registry.load("myplug:Greedy")
    assert name == "Greedy-v2" and obj.__name__ == "Greedy"
    name, obj = registry.load("myplug:plain")
    assert name == "plain" and obj() == 42
    name, obj = registry.load("myplug:helpers.inner")  # dotted attributes
    assert name == "inner" and obj() == 42


def test_module_attr_errors(plugin_dir):
    registry = make_registry()
    with pytest.raises(ValueError, match="cannot import 'nosuchmodule_xyz'"):
        registry.load("nosuchmodule_xyz:Thing")
    with pytest.raises(ValueError, match="has no attribute 'Missing'"):
        registry.load("myplug:Missing")
    with pytest.raises(ValueError, match="missing dependency xyz"):
        registry.load("myplug.bad:thing")
    with pytest.raises(ValueError, match="needs both parts"):
        registry.load("myplug:")


def test_entry_points(plugin_dir):
    registry = make_registry()
    assert registry.names() == ("Agn", "Cur", "BadEP", "GreedyEP", "PlainEP")
    name, obj = registry.load("GreedyEP")
    assert name == "Greedy-v2" and obj.__name__ == "Greedy"
    assert registry.load("PlainEP")[0] == "PlainEP"
    with pytest.raises(ValueError, match=r"teacher 'BadEP' \(entry point 'myplug.bad:thing'.*failed to load"):
        registry.load("BadEP")


def test_load_many_keeps_order_and_refuses_repeats(plugin_dir):
    registry = make_registry()
    loaded = registry.load_many("Cur,myplug:Greedy, Agn")
    assert [name for name, _ in loaded] == ["Cur", "Greedy-v2", "Agn"]
    with pytest.raises(ValueError, match="distinct names; Greedy-v2"):
        registry.load_many("GreedyEP,myplug:Greedy")
    with pytest.raises(ValueError, match="no teacher given"):
        registry.load_many(" , ")


def test_call_names_the_factory(plugin_dir):
    registry = make_registry()
    _, broken = registry.load("myplug:broken")
    with pytest.raises(ValueError, match="teacher factory 'broken' raised RuntimeError: boom"):
        registry.call("broken", broken)
    with pytest.raises(ValueError, match="factory 'plain' returned int, which is not a teacher"):
        registry.call("plain", lambda: 42, expect=str)
    with pytest.raises(ValueError, match="returned int"):
        registry.call("plain", lambda: 42, expect=lambda obj: hasattr(obj, "select"))
    assert registry.call("ok", lambda x, y=0: x + y, 1, y=2, expect=int) == 3
    with pytest.raises(ValueError, match="is not callable"):
        registry.call("thing", 42)


def test_display_name():
    class Named:
        name = "N"

    assert display_name(Named, "attr") == "N"
    assert display_name(object(), "attr") == "attr"
    assert display_name(type("E", (), {"name": ""}), "attr") == "attr"
