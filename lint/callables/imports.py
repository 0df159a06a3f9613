"""Resolve local names to dotted qualified names through a module's imports.

A small table of our own instead of libcst's QualifiedNameProvider, which
is far too slow for whole repositories (see STYLE.md).
"""

from __future__ import annotations

import posixpath
from typing import Callable, TypeVar

import libcst as cst

from jaxmem.lint.callables.project_names import is_project_module, is_project_name
from jaxmem.lint.syntax.walk import small_statements


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``jax.tree.map`` for that expression; None for anything but names and attributes."""
    kind = type(expr)  # not isinstance: libcst's node classes have no subclasses, and this is hot
    if kind is cst.Name:
        return expr.value
    if kind is cst.Attribute:
        base = dotted_name(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None


class ImportTable:
    """Maps names bound by import statements to what they import."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.stars: list[str] = []  # modules imported with ``from m import *``
        self.own_packages: tuple[str, ...] = ()

    @classmethod
    def from_module(cls, module: cst.Module, own_packages=()) -> "ImportTable":
        """Collect every import in ``module`` (top level and nested); ``own_packages``
        as for :func:`is_project_name`."""
        table = cls()
        table.own_packages = tuple(own_packages)
        collector = _ImportCollector(table.names, table.stars)
        for small in small_statements(module.body):
            if isinstance(small, cst.Import):
                collector.visit_Import(small)
            elif isinstance(small, cst.ImportFrom):
                collector.visit_ImportFrom(small)
        return table

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """``jnp.sum`` -> ``jax.numpy.sum`` when ``jnp`` was imported; else None."""
        base = expr
        while type(base) is cst.Attribute:
            base = base.value
        if type(base) is not cst.Name or base.value not in self.names:
            return None  # most expressions: a local, ``self.x``, a call's result (no string built)
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        target = self.names.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def is_project(self, qualified: str) -> bool:
        """Whether the resolved name ``qualified`` is the project's own (see :func:`is_project_name`)."""
        return is_project_name(qualified, self.own_packages)

    def is_project_module(self, module: str) -> bool:
        """Whether ``module`` is one of the project's (see :func:`is_project_module`)."""
        return is_project_module(module, self.own_packages)


class _ImportCollector:
    def __init__(self, names: dict[str, str], stars: list[str]) -> None:
        self.names = names
        self.stars = stars

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None:
                self.names[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                self.names[head] = head

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else ""
        prefix = "." * len(node.relative) + (module or "")
        if isinstance(node.names, cst.ImportStar):
            if module is not None:
                self.stars.append(prefix)
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = alias.asname.name.value if alias.asname is not None else name
            self.names[local] = f"{prefix}.{name}" if prefix and not prefix.endswith(".") else f"{prefix}{name}"


T = TypeVar("T")


def nearest_modules(importer: str, qualified: str, found: list[T], where: Callable[[T], tuple[str, str]]) -> list[T]:
    """Of the definitions ``found`` for the import-resolved name ``qualified`` in
    file ``importer``, the ones Python would import: when a module beside the
    importing file has that name, only its definitions (a script run from its
    folder has that folder first on ``sys.path``, so ``import train`` in
    ``examples/seq2seq/`` is ``examples/seq2seq/train.py``, not another
    example's).  ``where(item)`` gives an item's file and top-level name."""
    if len(found) < 2:
        return found
    folder = posixpath.dirname(importer.replace("\\", "/"))
    dotted = qualified.lstrip(".")
    near = [item for item in found if _module_beside(folder, *where(item)) == dotted]
    return near or found


def _module_beside(folder: str, path: str, name: str) -> str | None:
    """``train.train_step`` for ``folder/train.py`` and ``train_step``; None when not under ``folder``."""
    path = path.replace("\\", "/")
    if folder:
        if not path.startswith(folder + "/"):
            return None
        path = path[len(folder) + 1:]
    module = path.rsplit(".", 1)[0].split("/")
    if module[-1] == "__init__":
        module = module[:-1]
    return ".".join(module + [name]) if module else None
