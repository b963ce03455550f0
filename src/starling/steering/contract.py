"""The behaviour contract: a kernel sees exactly the components its behaviour declares.

A behaviour registers the components it reads from its own animals (``components``)
and, for a neighbour behaviour, from its targets (``target_components``). The pipeline
hands its kernel named tuples of the core arrays (``position``, ``velocity``,
``forward``, ``up``, ``uid``) plus those components and nothing else, so

* the kernel's argument types depend only on its declaration, not on what else the
  population carries: adding a component to a species (an ecology section, a drawn
  parameter) recompiles no kernel, and one compilation serves every species;
* a kernel that reads a component it did not declare is found before anything runs:
  :func:`undeclared_reads` reads the kernel's source when it registers, and
  :func:`explain_typing_error` turns the Numba error of a read the source check could
  not see (the tuple passed on to a helper) into one line naming both.
"""
from __future__ import annotations

import ast
import functools
import inspect
import os
import re
import textwrap
from typing import Callable, Optional

from ..world.population import CORE_FIELDS

#: which kernel arguments are animals (and, for a neighbour behaviour, its neighbour view), per
#: behaviour kind: (argument position, role)
ROLES: dict[str, tuple[tuple[int, str], ...]] = {
    "simple": ((0, "self"),),
    "ray": ((0, "self"),),
    "neighbor": ((0, "self"), (1, "target"), (2, "neighbors")),
}
_DECLARE = {"self": "components", "target": "target_components"}


def attribute_reads(kernel: Callable, kind: str) -> Optional[dict[str, set[str]]]:
    """The attributes the kernel's source reads from each role's argument (``agents.hunger``,
    ``neighbors.direction``…).

    None when the source is not available (a kernel built at run time): the run-time check
    then does the work.
    """
    func = getattr(kernel, "py_func", kernel)
    node = _function_node(func)
    if node is None:
        return None
    names = [a.arg for a in node.args.args]
    roles = {names[i]: role for i, role in ROLES[kind] if i < len(names)}
    reads: dict[str, set[str]] = {role: set() for role in roles.values()}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in roles:
            reads[roles[sub.value.id]].add(sub.attr)
    return reads


@functools.lru_cache(maxsize=64)
def _module_tree(filename: str, stamp: tuple) -> Optional[ast.Module]:
    """The parsed source file (``stamp``: its size and mtime, so an edited file is parsed again)."""
    try:
        with open(filename, "rb") as fh:
            return ast.parse(fh.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return None


def _function_node(func) -> Optional[ast.FunctionDef]:
    """The ``def`` of ``func`` in its module's syntax tree.

    Found by name and first line in the module parsed once (each behaviour module holds
    several kernels), not by ``inspect.getsource``, which tokenises the file again for
    every function: 44 built-in behaviours registering at import cost a tenth of a second.
    A function defined in a string or an interactive session falls back to ``getsource``.
    """
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    filename = code.co_filename
    tree = None
    try:
        st = os.stat(filename)
        tree = _module_tree(filename, (st.st_size, st.st_mtime_ns))
    except OSError:
        pass
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == func.__name__ and (
                    code.co_firstlineno in [node.lineno] + [d.lineno for d in node.decorator_list]):
                return node
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == func.__name__), None)


def undeclared_reads(name: str, kind: str, kernel: Callable, components, target_components) -> list[str]:
    """One message per component the kernel reads without declaring it (empty when it keeps the contract)."""
    reads = attribute_reads(kernel, kind)
    if reads is None:
        return []
    declared = {"self": set(components), "target": set(target_components)}
    problems = []
    for role, attrs in reads.items():
        if role not in declared:  # the neighbour view's fields are not components
            continue
        for attr in sorted(attrs - set(CORE_FIELDS) - declared[role] - set(dir(tuple))):
            whose = "its own animals" if role == "self" else "its targets"
            problems.append(f"behaviour {name!r} reads component {attr!r} of {whose} without declaring it: "
                            f"add {_DECLARE[role]}=({attr!r},) to its @behavior(...)")
    return problems


_UNKNOWN = re.compile(r"Unknown attribute '(\w+)' of type (\w+)")


def explain_typing_error(slot_name: str, behaviour: str, exc: Exception) -> Optional[str]:
    """The contract breach behind a Numba typing error, in one line (None if it is something else)."""
    found = _UNKNOWN.search(str(exc))
    if found is None or not found.group(2).startswith("Agents"):
        return None
    return (f"behaviour {slot_name!r} ({behaviour}) read component {found.group(1)!r} that it does not declare: "
            f"add it to components= (its own animals) or target_components= (its targets) of its @behavior(...)")
