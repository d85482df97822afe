"""The package's modules: none imports a private name (``_x``) from another, and no two import
each other, directly or round a loop (imports under ``TYPE_CHECKING`` and inside functions
included). The generated stubs (``gen``) are left out."""

from __future__ import annotations

import ast
import os
import unittest
from typing import Dict, List, Set, Tuple

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "proxybroker_client")


def modules() -> Dict[str, ast.Module]:
    """The package's own modules by name (``client``, ``lease``, …), parsed."""
    out = {}
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
                out[name[:-3]] = ast.parse(f.read(), filename=name)
    return out


def relative_imports(tree: ast.Module) -> List[Tuple[str, str]]:
    """Every ``from .module import name`` (and ``from . import module``) as (module, name)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                if node.module is None:
                    out.append((alias.name, ""))
                else:
                    out.append((node.module.split(".")[0], alias.name))
    return out


def loops(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The import loops of ``graph``, each as the path that closes it."""
    found: List[List[str]] = []
    done: Set[str] = set()
    path: List[str] = []

    def visit(node: str) -> None:
        if node in path:
            found.append(path[path.index(node):] + [node])
            return
        if node in done:
            return
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        path.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    return found


class ModulesTest(unittest.TestCase):
    def test_the_loop_check_finds_a_loop(self) -> None:
        self.assertEqual(loops({"a": {"b"}, "b": {"c"}, "c": {"a"}}), [["a", "b", "c", "a"]])
        self.assertEqual(loops({"a": {"b"}, "b": set()}), [])

    def test_no_private_name_is_imported_from_another_module(self) -> None:
        found = modules()
        self.assertIn("lease", found)
        private = [
            f"{name}: from .{module} import {imported}"
            for name, tree in found.items()
            for module, imported in relative_imports(tree)
            if imported.startswith("_")
        ]
        self.assertEqual(private, [])

    def test_no_import_loop(self) -> None:
        found = modules()
        graph = {
            name: {module for module, _ in relative_imports(tree) if module in found and module != name}
            for name, tree in found.items()
        }
        self.assertIn("lease", graph["client"])  # the scan sees the imports
        self.assertEqual(loops(graph), [])


if __name__ == "__main__":
    unittest.main()
