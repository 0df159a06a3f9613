"""``verify``: compile a function with and without its donation and compare.

The verdict comes from the compiled module itself (``input_output_alias`` and
``buffer_donor`` in ``Compiled.as_text()``, ``Compiled.args_info``), never
from jax's "Some donated buffers were not usable" warning: that warning
fires once per compilation, names no argument, says nothing about
``buffer_donor`` parameters XLA then ignores, and libraries silence it.
"""

from __future__ import annotations

import warnings
from contextlib import ExitStack
from typing import Callable

from jaxmem.runtime_check.hlo_aliases import ModuleDonations, parse_module_donations
from jaxmem.runtime_check.leaves import ArgLeaf, OutLeaf, argument_leaves, hlo_parameter_numbers, output_leaves
from jaxmem.runtime_check.report import (
    DEBUG_NANS, ELEMENT_COUNT_ONLY, NO_MATCHING_OUTPUT, NOT_DONATED, OUTPUTS_TAKEN, PRUNED_UNUSED,
    SHARDING_MISMATCH, UNKNOWN, LeafDonation, MemoryFigures, VerifyReport,
)
from jaxmem.runtime_check.targets import Target, resolve_target
from jaxmem.runtime_check.units import format_bytes


def verify(fn: Callable, *args, donate_argnums=None, donate_argnames=None, static_argnums=None,
           static_argnames=None, backend: str | None = None, measure: bool = False,
           wrapper: Callable | None = None, **kwargs) -> VerifyReport:
    """Compile ``fn`` with and without donation on ``backend`` and report what was reused.

    ``fn`` is a plain function, a ``jax.jit`` result (its declared donation
    and static arguments are used unless given here) or a ``jax.pmap``
    result.  ``args``/``kwargs`` are concrete arrays or
    ``jax.ShapeDtypeStruct`` pytrees (static arguments as their values).
    ``wrapper`` replaces ``jax.jit`` for other transforms, e.g.
    ``functools.partial(jax.pmap, axis_name="i")``.  With ``measure=True`` on
    a GPU/TPU both variants are also run, each in its own process, and
    their measured peak memory is compared with the prediction.
    """
    target = resolve_target(fn, donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                            static_argnums=static_argnums, static_argnames=static_argnames,
                            wrapper=wrapper)
    report = verify_target(target, args, kwargs, backend=backend)
    if measure:
        from jaxmem.runtime_check.measure import measure_target

        report.measurement = measure_target(target, args, kwargs, report, backend=backend)
    return report


def verify_target(target: Target, args: tuple, kwargs: dict, backend: str | None = None) -> VerifyReport:
    """The compiled-module part of :func:`verify` for an already resolved target."""
    import jax

    with ExitStack() as stack:
        if backend is not None:
            stack.enter_context(jax.default_device(jax.devices(backend)[0]))
        lowered = _lower(target.build(True), args, kwargs)
        compiled = lowered.compile()
        baseline = _lower(target.build(False), args, kwargs).compile()
        requested = _requested_flags(target, args, kwargs) if jax.config.jax_debug_nans else None
        platform = _platform(compiled, backend or jax.default_backend())

    module = parse_module_donations(compiled.as_text())
    arg_leaves = argument_leaves(compiled, target.function, len(args), target.static_argnums)
    out_leaves = output_leaves(compiled)
    parameters, exact = hlo_parameter_numbers(lowered, len(arg_leaves))
    tuple_args = bool((getattr(getattr(lowered, "_lowering", None), "compile_args", None) or {}).get("tuple_args"))
    wanted = requested if requested is not None else [leaf.donated for leaf in arg_leaves]
    context = _AliasContext(module, parameters, tuple_args, out_leaves, arg_leaves, wanted)
    leaves = [context.judge(leaf) for leaf, asked in zip(arg_leaves, wanted) if asked]
    notes = []
    if not exact:
        notes.append("jax's record of pruned arguments was not available; assumed none were pruned")
    if requested is not None:
        notes.append("jax_debug_nans is on: JAX does not donate anything while it is set")
    location = _definition_location(target.function)
    return VerifyReport(
        function=target.qualname, definition_path=location[0], definition_line=location[1],
        backend=platform, donate_argnums=target.donate_argnums, donate_argnames=target.donate_argnames,
        with_donation=_figures(compiled), without_donation=_figures(baseline), leaves=leaves,
        notes=notes, signature=_signature_text(arg_leaves),
    )


def _platform(compiled, fallback: str) -> str:
    try:
        return compiled.runtime_executable().local_devices()[0].platform
    except Exception:  # noqa: BLE001 - some executables do not expose their devices
        return fallback


def _lower(transformed, args, kwargs):
    # jax warns when a donation is unusable; the report says it precisely instead.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        return transformed.lower(*args, **kwargs)


def _requested_flags(target: Target, args, kwargs) -> list[bool]:
    """Which leaves the donation asks for, as jax would see it with debug_nans off."""
    import jax

    with jax.debug_nans(False):
        compiled = _lower(target.build(True), args, kwargs)
    return [bool(info.donated) for info in jax.tree_util.tree_leaves(compiled.args_info)]


def _figures(compiled) -> MemoryFigures:
    stats = compiled.memory_analysis()
    if stats is None:
        return MemoryFigures(None, None, None, None, None)
    peak = getattr(stats, "peak_memory_in_bytes", None)
    return MemoryFigures(
        argument_bytes=stats.argument_size_in_bytes, output_bytes=stats.output_size_in_bytes,
        alias_bytes=stats.alias_size_in_bytes, temp_bytes=stats.temp_size_in_bytes,
        peak_bytes=int(peak) if peak is not None else None,
        generated_code_bytes=stats.generated_code_size_in_bytes,
    )


def _definition_location(fn) -> tuple[str | None, int | None]:
    from jaxmem.runtime_check.jit_patch import definition_line_of

    code = getattr(fn, "__code__", None)
    if code is None:
        return None, None
    return code.co_filename, definition_line_of(fn)


def _signature_text(leaves: list[ArgLeaf], shown: int = 6) -> str:
    text = ", ".join(f"{leaf.path}: {leaf.dtype}[{','.join(map(str, leaf.shape))}]" for leaf in leaves[:shown])
    return text + (f", ... ({len(leaves)} leaves in all)" if len(leaves) > shown else "")


def _sharding_text(sharding) -> str | None:
    return None if sharding is None else str(sharding)


def _memory_kind(sharding) -> str | None:
    return getattr(sharding, "memory_kind", None)


class _AliasContext:
    """Judges each donated leaf against the compiled module's aliases."""

    def __init__(self, module: ModuleDonations, parameters: dict[int, int], tuple_args: bool,
                 outputs: list[OutLeaf], arguments: list[ArgLeaf], wanted: list[bool]):
        self.module = module
        self.parameters = parameters
        self.tuple_args = tuple_args
        self.outputs = outputs
        self.aliased_outputs = {self._output_position(alias.output_index) for alias in module.aliases}
        self.arguments = arguments
        self.wanted = wanted

    def _output_position(self, index: tuple[int, ...]) -> int:
        return index[0] if index else 0

    def _address(self, leaf: ArgLeaf) -> tuple[int, tuple[int, ...]] | None:
        number = self.parameters.get(leaf.flat_index)
        if number is None:
            return None
        return (0, (number,)) if self.tuple_args else (number, ())

    def judge(self, leaf: ArgLeaf) -> LeafDonation:
        """The :class:`LeafDonation` for one leaf the donation asked for."""
        address = self._address(leaf)
        alias = self.module.aliased_parameter(*address) if address is not None else None
        if alias is not None:
            output = self.outputs[self._output_position(alias.output_index)]
            return self._result(leaf, True, output=output.path)
        code, reason = self._why_not(leaf, address)
        return self._result(leaf, False, code=code, reason=reason)

    def _result(self, leaf: ArgLeaf, aliased: bool, output=None, code=None, reason=None) -> LeafDonation:
        return LeafDonation(
            path=leaf.path, parameter=leaf.parameter, parameter_index=leaf.parameter_index,
            shape=leaf.shape, dtype=leaf.dtype, nbytes=leaf.nbytes,
            sharding=_sharding_text(leaf.sharding), aliased=aliased, output=output,
            reason_code=code, reason=reason,
        )

    def _why_not(self, leaf: ArgLeaf, address) -> tuple[str, str]:
        import jax

        if not leaf.donated:
            if jax.config.jax_debug_nans:
                return DEBUG_NANS, "jax_debug_nans is on, and JAX silently turns donation off while it is"
            return NOT_DONATED, ("JAX did not mark it donated (for jax.pmap only positional "
                                 "arguments are donated)")
        if address is None:
            return PRUNED_UNUSED, ("the function never uses this argument, so jax pruned it "
                                   "(keep_unused=False) and there is no buffer to reuse")
        same_type = [out for out in self.outputs if out.shape == leaf.shape and out.dtype == leaf.dtype]
        if self.module.is_donor(*address):
            same_count = [out for out in self.outputs
                          if out.flat_index not in self.aliased_outputs and
                          _element_count(out.shape) == _element_count(leaf.shape)]
            candidates = ", ".join(f"{out.path} {out.dtype}[{','.join(map(str, out.shape))}] "
                                   f"({format_bytes(out.nbytes)})" for out in same_count[:3])
            return ELEMENT_COUNT_ONLY, (
                f"no output has shape {leaf.shape} and dtype {leaf.dtype}; only an output with the same "
                f"element count ({candidates or 'none left'}), which jax left to XLA as a buffer donor "
                f"and XLA did not reuse (the input is {format_bytes(leaf.nbytes)})")
        if not same_type:
            near = [out for out in self.outputs if out.shape == leaf.shape]
            hint = (f" (output {near[0].path} has the same shape but dtype {near[0].dtype})"
                    if near else "")
            return NO_MATCHING_OUTPUT, f"no output has shape {leaf.shape} and dtype {leaf.dtype}{hint}"
        free = [out for out in same_type if out.flat_index not in self.aliased_outputs]
        if not free:
            donors = sum(1 for arg, asked in zip(self.arguments, self.wanted)
                         if asked and arg.shape == leaf.shape and arg.dtype == leaf.dtype)
            return OUTPUTS_TAKEN, (
                f"all {len(same_type)} output(s) of shape {leaf.shape} and dtype {leaf.dtype} already "
                f"reuse other donated buffers ({donors} donated leaves of that type)")
        output = free[0]
        if (_sharding_text(output.sharding) != _sharding_text(leaf.sharding)
                or _memory_kind(output.sharding) != _memory_kind(leaf.sharding)):
            return SHARDING_MISMATCH, (
                f"output {output.path} has the same shape and dtype but a different sharding or "
                f"memory kind (input {leaf.sharding}, output {output.sharding})")
        return UNKNOWN, (f"output {output.path} has the same shape and dtype, but XLA chose not "
                         "to alias it")


def _element_count(shape) -> int:
    count = 1
    for size in shape:
        count *= size
    return count
