"""The package's import graph (grimp, over the mirror scripts/lint-imports.sh builds) has no
cycle, neither between modules nor between the sub-packages of any package, and the layer
contract of pyproject.toml names every top-level part of the package.

Imports under ``if TYPE_CHECKING:`` and inside functions count: a cycle hidden in either is
still two modules that need each other."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Run in the mirror, so that ``speakerflow`` resolves to it and not to the editable install.
GRAPH_SCRIPT = r"""
import json, sys
import grimp

graph = grimp.build_graph("speakerflow", include_external_packages=False, cache_dir=None)

def cycles(nodes, edges):
    # Tarjan's strongly connected components, iteratively; components of size > 1 are cycles
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]; counter[0] += 1
        stack.append(root); on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]; counter[0] += 1
                    stack.append(child); on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop(); on.discard(m); comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out

modules = set(graph.modules)
edges = {m: graph.find_modules_directly_imported_by(m) for m in modules}
packages = {m.rsplit(".", 1)[0] for m in modules if "." in m}
by_package = {}
for pkg in sorted(packages):
    depth = pkg.count(".") + 1
    child = lambda m: ".".join(m.split(".")[: depth + 1]) if m.startswith(pkg + ".") else None
    nodes = {child(m) for m in modules if child(m)}
    squashed = {}
    for m in modules:
        a = child(m)
        if a is None:
            continue
        for b in (child(x) for x in edges[m]):
            if b is not None and b != a:
                squashed.setdefault(a, set()).add(b)
    found = cycles(nodes, squashed)
    if found:
        by_package[pkg] = found
top = sorted(m.split(".")[1] for m in modules if m.count(".") == 1)
print(json.dumps({"modules": cycles(modules, edges), "packages": by_package, "top": top}))
"""


@pytest.fixture(scope="module")
def import_graph(tmp_path_factory):
    tree = tmp_path_factory.mktemp("import-tree")
    subprocess.run(
        ["sh", str(ROOT / "scripts" / "lint-imports.sh"), "--tree-only"],
        env={**os.environ, "IMPORT_TREE": str(tree)},
        check=True,
    )
    out = subprocess.run(
        [sys.executable, "-c", GRAPH_SCRIPT],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_no_module_imports_itself_through_others(import_graph):
    assert import_graph["modules"] == [], "modules in an import cycle (move the shared part down)"


def test_no_package_cycle_between_sub_packages(import_graph):
    assert import_graph["packages"] == {}, "sub-packages that import each other"


def test_the_layer_contract_names_every_top_level_part(import_graph):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [top] = [c for c in config["contracts"] if c.get("containers") == ["speakerflow"]]
    named = {m.strip() for layer in top["layers"] for m in layer.replace(":", "|").split("|")}
    assert sorted(named) == import_graph["top"]
