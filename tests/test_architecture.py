"""The package's import structure, read from the source with ``ast`` (nothing is imported).

Every ``import`` and ``from ... import`` of every module of ``loopcheck/`` counts, at the top of
the module or inside a function, absolute or relative. Those under ``if TYPE_CHECKING:`` count
for the layers (a type named across them is a dependency all the same) but not for cycles: they
never run, and naming a type of a module that imports this one is what they are for. An edge
goes to the module
imported: ``from loopcheck.fixes import model`` names ``loopcheck.fixes.model``,
``from loopcheck.fixes import attach_fixes`` names ``loopcheck.fixes`` (its ``__init__``). The
parent packages a module's import runs on the way are not edges: they are where a package
gathers its own modules.

Asserted: no cycle among the modules, and the analysis (``loopcheck/engine/``,
``loopcheck/rules/``) imports none of the front ends (the command line, the language server) nor
the workspace (configuration, files, cache, noqa, notebooks). See ``docs/architecture.md``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "loopcheck"

#: The analysis: what it may not import (by module name prefix).
ANALYSIS = ("loopcheck.engine", "loopcheck.rules")
FRONT_ENDS_AND_WORKSPACE = ("loopcheck.cli", "loopcheck.server", "loopcheck.workspace")


def module_name(path: Path) -> str:
    """``loopcheck/cli/commands.py`` → ``loopcheck.cli.commands``; a package's ``__init__.py`` → the package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package, by name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The known module ``name`` is, or the longest known package it lies in (a name that is
    an attribute, not a module); ``None`` outside the package."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, typing: bool):
    """Every import statement of ``tree``, at any depth; without those under ``if
    TYPE_CHECKING:`` unless ``typing``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for child in ast.iter_child_nodes(node):
            if typing or not _is_type_checking(child):
                todo.append(child)
            else:
                todo.extend(child.orelse)


def imports(name: str, path: Path, known: dict[str, Path], typing: bool = True) -> set[str]:
    """The package's modules that module ``name`` (at ``path``) imports, anywhere in it
    (without the imports for type checking unless ``typing``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _import_nodes(tree, typing):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.add(_target(alias.name, known))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                out.add(submodule if submodule in known else _target(source, known))
    out.discard(None)
    out.discard(name)
    return out


def import_graph(typing: bool = True) -> dict[str, set[str]]:
    """Module → the package's modules it imports (``typing``: with the imports for type checking)."""
    known = modules()
    return {name: imports(name, path, known, typing) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as ``[a, b, ..., a]``, or ``None`` when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_graph_sees_imports_inside_functions_relative_ones_and_type_checking_ones():
    graph, running = import_graph(), import_graph(typing=False)
    # relative imports (trace's modules import each other with ``from .x import``)
    assert "loopcheck.trace.amp" in graph["loopcheck.trace.watch"]
    # an import inside a function (the command line imports the analysis when it checks)
    assert "loopcheck.analysis" in running["loopcheck.check"]
    # ``from package import module`` names the module
    assert "loopcheck.fixes.model" in running["loopcheck.workspace.noqa"]
    # under ``if TYPE_CHECKING:`` (the reporters name the notebook's type only)
    assert "loopcheck.workspace.notebook" in graph["loopcheck.cli.reporters"]
    assert "loopcheck.workspace.notebook" not in running["loopcheck.cli.reporters"]


def test_find_cycle_reports_the_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    cycle = find_cycle(import_graph(typing=False))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_analysis_imports_no_front_end_nor_the_workspace():
    wrong = sorted(
        f"{name} imports {dep}"
        for name, deps in import_graph().items() if _under(name, ANALYSIS)
        for dep in deps if _under(dep, FRONT_ENDS_AND_WORKSPACE)
    )
    assert not wrong, "\n".join(wrong)
