"""What a jit wraps: the signature, name and body (or library contract) of the
function expression a definition form hands to ``jax.jit``, found through the
enclosing scopes, the module's factories, its imports and the library
callables jaxmem knows (``jax.jit(tx.update)``, ``jax.jit(mjx.step)``)."""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.callables.definition_scopes import Scope, bindings, enclosing_class, returned_function, scope_body
from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.jit_calls import JitCallReader
from jaxmem.lint.callables.library_callables import (
    KnownCallable,
    library_function,
    library_method,
    pair_field,
    unpacked_in,
    vmapped,
)
from jaxmem.lint.callables.signatures import Signature
from jaxmem.lint.syntax.walk import descendants_of_type
from jaxmem.lint.values.refs import ident

# (signature, wrapped_name, node or library contract, qualified_if_imported)
Wrapped = tuple[Signature | None, str | None, cst.FunctionDef | cst.Lambda | KnownCallable | None, str | None]


class WrappedFunctions:
    """Looks up the functions jits of one module wrap."""

    def __init__(self, module: cst.Module, imports: ImportTable, calls: JitCallReader,
                 module_functions: dict[str, cst.FunctionDef]) -> None:
        self.module = module
        self.imports = imports
        self.calls = calls
        self.module_functions = module_functions
        self._globals: frozenset[str] | None = None
        self._scope_bindings: dict[int, dict[str, list]] = {}  # scope node id -> name -> its bindings

    def signature_of_wrapped(self, expr: cst.BaseExpression | None, scopes: list[Scope]) -> Wrapped:
        """``(signature, wrapped_name, node, qualified_if_imported)`` of a jitted expression."""
        if expr is None:
            return None, None, None, None
        if isinstance(expr, cst.Lambda):
            return Signature.of(expr), "<lambda>", expr, None
        if isinstance(expr, cst.Name):
            for scope in reversed(scopes):
                if scope.kind != "class" and expr.value in scope.functions:
                    node = scope.functions[expr.value]
                    return Signature.of(node), expr.value, node, None
            known = self._unpacked_library_function(expr, scopes)
            if known is not None:
                return known.signature, expr.value, known, None
            made = self._made_by_factory(expr.value, scopes)
            if made is not None:
                return made
            qualified = self.imports.resolve(expr)
            known = library_function(qualified)
            if known is not None:
                return known.signature, expr.value, known, None  # from mujoco.mjx import step; jax.jit(step)
            return None, expr.value, None, qualified
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            cls = enclosing_class(scopes)
            if cls is not None and expr.value.value in ("self", "cls") and expr.attr.value in cls.functions:
                node = cls.functions[expr.attr.value]
                sig = Signature.of(node)
                is_static = any(
                    isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators
                )
                return (sig if is_static else sig.drop_leading(1)), expr.attr.value, node, None
            known = self._library_method(expr.value.value, expr.attr.value, scopes)
            if known is not None:
                return known.signature, expr.attr.value, known, None  # jax.jit(tx.update), jax.jit(buffer.add)
            qualified = self.imports.resolve(expr)
            known = library_function(qualified)
            if known is not None:
                return known.signature, expr.attr.value, known, None  # jax.jit(mjx.step)
            return None, expr.attr.value, None, qualified
        if isinstance(expr, cst.Call) and self.imports.resolve(expr.func) == "jax.vmap" and expr.args:
            # jax.jit(jax.vmap(mjx.step, in_axes=(None, 0))): only a library contract is carried over
            sig, name, known, _ = self.signature_of_wrapped(expr.args[0].value, scopes)
            known = vmapped(known, expr) if isinstance(known, KnownCallable) else None
            if known is not None:
                return sig, name, known, None
            return None, None, None, None
        if isinstance(expr, cst.Call) and self.calls.is_partial(expr.func) and expr.args:
            inner_sig, name, node, qual = self.signature_of_wrapped(expr.args[0].value, scopes)
            bound = [a for a in expr.args[1:] if a.keyword is None and not a.star]
            keywords = frozenset(a.keyword.value for a in expr.args[1:] if a.keyword is not None)
            if any(a.star for a in expr.args[1:]):
                return None, name, node, qual
            return (inner_sig.drop_leading(len(bound), keywords) if inner_sig else None), name, node, qual
        return None, None, None, None

    def _made_by_factory(self, name: str, scopes: list[Scope]) -> Wrapped | None:
        """``train_step = get_train_step(model, lr)``: the function a factory returns.

        Same file: the factory's nested ``def`` (or ``lambda``) it returns.
        Another file: the factory's qualified name, for the join to look up
        (``wrapped_qualname`` ending in ``()``).
        """
        for scope in reversed(scopes):
            if scope.kind == "class":
                continue
            value = scope.constants.get(name)
            if not isinstance(value, cst.Call):
                continue
            factory_name = value.func.value if isinstance(value.func, cst.Name) else None
            factory = self.module_functions.get(factory_name) if factory_name else None
            if factory is not None:
                returned = returned_function(factory)
                if returned is not None:
                    return Signature.of(returned), name, returned, None
                return None
            qualified = self.imports.resolve(value.func)
            if qualified is not None:
                return None, name, None, qualified + "()"
            return None
        return None

    def _library_method(self, name: str, method: str, scopes: list[Scope]) -> KnownCallable | None:
        """The contract of ``name.<method>`` when ``name`` is bound only to a library
        object jaxmem knows (an optax transform, a flashbax buffer): ``name = value``."""
        assign = self._sole_assignment(name, scopes)
        if assign is None or not any(isinstance(t.target, cst.Name) for t in assign.targets):
            return None
        return library_method(assign.value, method, self.imports)

    def _unpacked_library_function(self, expr: cst.Name, scopes: list[Scope]) -> KnownCallable | None:
        """``opt_init, opt_update = optax.adam(lr)``, ``init_fn, apply_fn = simulate.nve(...)``:
        the library function ``expr`` is bound to, also where the jit that wraps it
        rebinds its name (``apply_fn = jax.jit(apply_fn)``)."""
        assign = self._sole_assignment(expr.value, scopes, rebound_by=expr)
        found = unpacked_in([assign], expr.value) if assign is not None else None
        if found is None:
            return None
        value, position, targets = found
        return pair_field(value, position, targets, self.imports)

    def _sole_assignment(self, name: str, scopes: list[Scope],
                         rebound_by: cst.Name | None = None) -> cst.Assign | None:
        """The assignment that is the only binding of ``name`` in the innermost enclosing
        scope that binds it; None when that scope binds it otherwise (a parameter, a loop,
        ``with ... as``, ``global``) or more than once: any other binding may hand out
        another object.  With ``rebound_by`` (the name as a jit's argument), a later
        ``name = jit(name)`` wrapping that very node is not counted: it wraps the value
        the first binding gave."""
        for scope in reversed(scopes):
            if scope.kind == "class" or scope.node is None:
                continue
            if isinstance(scope.node, (cst.FunctionDef, cst.Lambda)) and \
                    ident(name) in {param.name for param in Signature.of(scope.node).params}:
                return None
            key = id(scope.node)
            if key not in self._scope_bindings:
                self._scope_bindings[key] = bindings(scope_body(scope))
            found = self._scope_bindings[key].get(ident(name))
            if not found:
                continue
            if rebound_by is not None and len(found) == 2 and _wraps(found[1], rebound_by):
                found = found[:1]  # step_fn = jit(step_fn), after the binding it wraps
            if len(found) > 1 or (isinstance(scope.node, cst.Module) and name in self._declared_global()):
                return None  # bound twice, or a function rebinds the module's name
            return found[0]
        return None

    def _declared_global(self) -> frozenset[str]:
        """Names some function of the module declares ``global``."""
        if self._globals is None:
            self._globals = frozenset(item.name.value for node in descendants_of_type(self.module, cst.Global)
                                      for item in node.names)
        return self._globals


def _wraps(assign: cst.Assign | None, name: cst.Name) -> bool:
    """Whether ``assign`` is ``name = f(name, ...)`` with ``name`` that very node as
    the call's first argument (``step_fn = jax.jit(step_fn)``)."""
    return (assign is not None and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
            and assign.targets[0].target.value == name.value and isinstance(assign.value, cst.Call)
            and bool(assign.value.args) and assign.value.args[0].value is name)
