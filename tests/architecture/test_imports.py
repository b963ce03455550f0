"""The import graph: one-way layers (import-linter, also run by `make test`) and no cycles."""
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter[0]
                counter[0] += 1
                stack.append(node)
                on.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            for nxt in edges[node]:
                if nxt in on:
                    low[node] = min(low[node], low[nxt])
            if low[node] == index[node]:
                part = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    part.append(m)
                    if m == node:
                        break
                if len(part) > 1:
                    out.append(sorted(part))
    return out


def test_the_layer_contracts_hold():
    result = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "broken" in result.stdout and " 0 broken" in result.stdout


def test_no_module_imports_itself_back():
    graph = grimp.build_graph("starling")
    # a package's __init__ re-exporting its own submodules is not a cycle of ideas
    for name in list(graph.modules):
        for imported in list(graph.find_modules_directly_imported_by(name)):
            if imported.startswith(name + ".") or name.startswith(imported + ".") and imported.count(".") == 0:
                graph.remove_import(importer=name, imported=imported)
    assert _cycles(graph) == []
