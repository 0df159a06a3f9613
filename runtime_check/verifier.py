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
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from jaxmem.runtime_check.hlo_aliases import ModuleDonations, parse_module_donations
from jaxmem.runtime_check.hlo_copies import entry_parameter_names, extra_copies
from jaxmem.runtime_check.leaves import (
    ArgLeaf, OutLeaf, argument_leaves, hlo_parameter_numbers, output_leaves, parameter_names,
)
from jaxmem.runtime_check.library_jits import inner_call, library_kind, user_leaf_names
from jaxmem.runtime_check.report import (
    DEBUG_NANS, DONATED_TWICE, ELEMENT_COUNT_ONLY, INPUT_RESHARDED, NO_MATCHING_OUTPUT, NOT_DONATED, OUTPUTS_TAKEN,
    PRUNED_UNUSED,
    SHARDING_MISMATCH, UNKNOWN, LeafDonation, MemoryFigures, VerifyReport,
)
from jaxmem.runtime_check.targets import Target, jit_target, resolve_target, split_bound
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
    fn, args = split_bound(fn, args)
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
        built = _compile(target, args, kwargs)
        platform = _platform(built.compiled, backend or jax.default_backend())

    module_text = built.compiled.as_text()
    module = parse_module_donations(module_text)
    arg_leaves = argument_leaves(built.compiled, built.function, built.positional_count, built.static_argnums)
    parameters, exact = hlo_parameter_numbers(built.lowered, len(arg_leaves))
    arg_leaves = _user_view(target, arg_leaves, built)
    out_leaves = output_leaves(built.compiled)
    tuple_args = bool((getattr(getattr(built.lowered, "_lowering", None), "compile_args", None) or {})
                      .get("tuple_args"))
    wanted = _requested(target, arg_leaves, built)
    repeated = repeated_buffers(arg_leaves, built.dynamic_leaves, wanted)
    context = _AliasContext(module, parameters, tuple_args, out_leaves, arg_leaves, wanted)
    moved = resharded_inputs(arg_leaves, built.dynamic_leaves)
    leaves = [repeated.get(leaf.flat_index) or _unless_moved(context.judge(leaf), moved.get(leaf.flat_index))
              for leaf, asked in zip(arg_leaves, wanted) if asked]
    if target.kind == "nnx":
        leaves = _nnx_output_names(leaves, arg_leaves)
    notes = []
    if not exact:
        notes.append("jax's record of pruned arguments was not available; assumed none were pruned")
    if jax.config.jax_debug_nans:
        notes.append("jax_debug_nans is on: JAX does not donate anything while it is set")
    devices = _spread(target, arg_leaves)
    if devices is not None:
        how = "jax.pmap" if target.kind == "pmap" else "sharded"
        notes.append(f"{how} over {devices} device(s): the compiled memory figures and the leaf sizes are "
                     "per device; leaf types are global")
    location = _definition_location(target.function)
    with_figures, without_figures = _figures(built.compiled), _figures(built.baseline)
    names = {number: arg_leaves[flat].path for flat, number in parameters.items()} if not tuple_args else {}
    gap = saving_gap(leaves, with_figures, without_figures, module_text, built.baseline.as_text(), names)
    return VerifyReport(
        function=target.qualname, definition_path=location[0], definition_line=location[1],
        backend=platform, donate_argnums=target.donate_argnums, donate_argnames=target.donate_argnames,
        with_donation=with_figures, without_donation=without_figures, leaves=leaves, saving_gap=gap,
        notes=notes, signature=_signature_text(arg_leaves), per_device_of=devices,
        donation_label=target.donation_label,
    )


@dataclass
class _Compiled:
    """Both variants of one target, and what is needed to name their leaves."""

    lowered: Any
    compiled: Any
    baseline: Any
    function: Callable  # whose parameters name the leaves
    positional_count: int
    static_argnums: tuple
    dynamic_leaves: list  # the argument leaves as passed, in ``args_info`` order
    user_names: dict = field(default_factory=dict)  # id(array) -> (parameter, position, path)
    requested: list | None = None  # library targets: jax's donation flags with debug_nans off


def _compile(target: Target, args: tuple, kwargs: dict) -> _Compiled:
    transformed = target.build(True)
    if library_kind(transformed) is not None:
        parameters, _ = parameter_names(target.function)
        built = inner_call(transformed, args, kwargs, lambda inner, pure_args, pure_kwargs: _compile_inner(
            target, inner, pure_args, pure_kwargs))
        built.user_names = user_leaf_names(parameters, args, kwargs)
        return built
    lowered = _lower(transformed, args, kwargs)
    return _Compiled(lowered, lowered.compile(), _lower(target.build(False), args, kwargs).compile(),
                     target.function, len(args), target.static_argnums,
                     _dynamic_leaves(args, kwargs, target.static_argnums, target.static_argnames))


def _compile_inner(target: Target, inner, args: tuple, kwargs: dict) -> _Compiled:
    """Compile the inner ``jax.jit`` of an nnx/eqx object on the arguments the library made."""
    import jax

    explicit = target.explicit_donation
    inner_target = jit_target(inner, target.donate_argnums if explicit else None,
                              target.donate_argnames if explicit else None)
    lowered = _lower(inner_target.build(True), args, kwargs)
    requested = None
    if jax.config.jax_debug_nans:
        with jax.debug_nans(False):
            flags = _lower(inner_target.build(True), args, kwargs).args_info
        requested = [bool(info.donated) for info in jax.tree_util.tree_leaves(flags)]
    return _Compiled(lowered, lowered.compile(), _lower(inner_target.build(False), args, kwargs).compile(),
                     inner._fun, len(args), inner_target.static_argnums,
                     _dynamic_leaves(args, kwargs, inner_target.static_argnums, inner_target.static_argnames),
                     requested=requested)


def _dynamic_leaves(args: tuple, kwargs: dict, static_argnums, static_argnames) -> list:
    import jax

    static = {i % len(args) for i in static_argnums} if args else set()
    positional = tuple(value for i, value in enumerate(args) if i not in static)
    keywords = {k: v for k, v in kwargs.items() if k not in set(static_argnames)}
    return jax.tree_util.tree_leaves((positional, keywords))


def _user_view(target: Target, leaves: list[ArgLeaf], built: _Compiled) -> list[ArgLeaf]:
    """Leaves named after the user's arguments, with pmap's per-leaf donation and per-device sizes."""
    if built.user_names and len(built.dynamic_leaves) == len(leaves):
        renamed = []
        for leaf, value in zip(leaves, built.dynamic_leaves):
            found = built.user_names.get(id(value))
            if found is not None:
                leaf = replace(leaf, parameter=found[0], parameter_index=found[1], path=found[2])
            renamed.append(leaf)
        leaves = renamed
    if target.kind != "pmap":
        return [replace(leaf, nbytes=_shard_bytes(leaf)) for leaf in leaves]
    import jax

    # jax.pmap's args_info marks donation per flattened leaf index, not per argument; pmap
    # donates every leaf of a positional argument in donate_argnums and nothing passed by keyword.
    donating = not jax.config.jax_debug_nans
    return [replace(leaf, donated=donating and not leaf.keyword and leaf.parameter_index in target.donate_argnums,
                    nbytes=_per_device_bytes(leaf, _mapped_axis(target.in_axes, leaf)))
            for leaf in leaves]


def _nnx_output_names(leaves: list[LeafDonation], arguments: list[ArgLeaf]) -> list[LeafDonation]:
    """Name nnx's state outputs after the inputs they update.

    nnx.jit's inner function returns ``(args_out, kwargs_out, out)`` where
    ``args_out`` repeats each module argument's state in the argument's own
    structure, so ``result[0][0].states[0][1]`` is the new value of the leaf
    at ``[0][0].states[0][1]`` of the arguments (``model.kernel``).
    """
    import jax

    by_output = {"result" + jax.tree_util.keystr(arg.key_path): arg.path for arg in arguments}
    return [replace(leaf, output=f"{by_output[leaf.output]} (its new value)") if leaf.output in by_output else leaf
            for leaf in leaves]


def _mapped_axis(in_axes, leaf: ArgLeaf) -> int | None:
    if leaf.keyword or isinstance(in_axes, int) or in_axes is None:
        return 0 if leaf.keyword else in_axes
    if isinstance(in_axes, (tuple, list)) and leaf.parameter_index is not None and leaf.parameter_index < len(in_axes):
        axis = in_axes[leaf.parameter_index]
        return axis if axis is None or isinstance(axis, int) else 0
    return 0


def _per_device_bytes(leaf: ArgLeaf, axis: int | None) -> int:
    if axis is None or not leaf.shape or leaf.shape[axis] == 0:
        return leaf.nbytes
    return leaf.nbytes // leaf.shape[axis]


def _shard_bytes(leaf: ArgLeaf) -> int:
    """Bytes of one device's shard: XLA's memory figures for a sharded program are per device."""
    shard_shape = getattr(leaf.sharding, "shard_shape", None)
    if shard_shape is None or _device_count(leaf.sharding) <= 1:
        return leaf.nbytes
    try:
        shape = shard_shape(leaf.shape)
    except Exception:  # noqa: BLE001 - a sharding that cannot split this shape: keep the global size
        return leaf.nbytes
    return leaf.nbytes // max(1, _element_count(leaf.shape)) * _element_count(shape)


def _device_count(sharding) -> int:
    try:
        return len(sharding.device_set)
    except Exception:  # noqa: BLE001
        return 1


def _spread(target: Target, leaves: list[ArgLeaf]) -> int | None:
    """Over how many devices the figures are split (pmap's devices, or the widest sharding); None: one."""
    devices = _pmap_device_count(target, leaves)
    if devices is not None:
        return devices
    widest = max((_device_count(leaf.sharding) for leaf in leaves if leaf.sharding is not None), default=1)
    return widest if widest > 1 else None


def _pmap_device_count(target: Target, leaves: list[ArgLeaf]) -> int | None:
    if target.kind != "pmap":
        return None
    for leaf in leaves:
        axis = _mapped_axis(target.in_axes, leaf)
        if axis is not None and leaf.shape:
            return leaf.shape[axis]
    return None


def _requested(target: Target, leaves: list[ArgLeaf], built: _Compiled) -> list[bool]:
    """Which leaves the donation asks for (whether or not jax then donated them)."""
    if target.kind in ("nnx", "eqx"):
        return built.requested if built.requested is not None else [leaf.donated for leaf in leaves]
    names = set(target.donate_argnames)
    nums = set(target.donate_argnums)
    return [leaf.parameter in names or (leaf.parameter_index in nums) for leaf in leaves]


GAP_SHOWN_FROM = 0.01  # temporaries growth, as a share of the reused bytes, worth explaining


def saving_gap(leaves: list[LeafDonation], with_donation: MemoryFigures, without_donation: MemoryFigures,
               with_text: str, without_text: str, parameter_paths: dict[int, str]) -> dict | None:
    """Why the donation saves less than the bytes it reuses, from the two compiled modules.

    None when XLA's temporaries did not grow (or by less than 1% of the reused
    bytes while the saving is whole).  Otherwise the reused bytes, the
    saving, both temporaries figures and the copies only the donated module
    makes (a donated buffer overwritten while its old value is still read is
    copied first), each named after the leaf it copies where it is a parameter.
    """
    grown = (with_donation.temp_bytes or 0) - (without_donation.temp_bytes or 0)
    reused = sum(leaf.nbytes for leaf in leaves if leaf.aliased)
    before, after = without_donation.peak_bytes, with_donation.peak_bytes
    saving = None if before is None or after is None else before - after
    if grown <= 0 or (grown < GAP_SHOWN_FROM * reused and (saving is None or saving >= reused)):
        return None  # no growth worth a line: a few bytes of scalars do not explain anything
    entry_names = entry_parameter_names(with_text)
    copies = []
    for copy in extra_copies(with_text, without_text):
        number = entry_names.index(copy.operand) if copy.operand in entry_names else None
        what = (f"parameter `{parameter_paths[number]}`" if number in parameter_paths
                else "an intermediate value" if number is None else f"parameter {number}")
        copies.append({"of": what, "operand": copy.operand, "type": copy.type_text, "bytes": copy.nbytes})
    return {
        "reused_bytes": reused, "saving_bytes": saving,
        "temp_bytes_without": without_donation.temp_bytes, "temp_bytes_with": with_donation.temp_bytes,
        "extra_copies": copies, "extra_copy_bytes": sum(copy["bytes"] for copy in copies),
    }


def resharded_inputs(leaves: list[ArgLeaf], values: list) -> dict[int, str]:
    """``{flat index: reason}`` for concrete arrays placed differently from what the program takes.

    jax then copies the array to the program's input sharding before the call
    and donates the copy: the caller's array is neither reused nor deleted
    (a pmap over arrays made on one device, a jit with ``in_shardings``).
    """
    import jax

    if len(values) != len(leaves):
        return {}
    moved = {}
    for leaf, value in zip(leaves, values):
        if not isinstance(value, jax.Array) or leaf.sharding is None:
            continue
        try:
            same = value.sharding.is_equivalent_to(leaf.sharding, len(value.shape))
        except Exception:  # noqa: BLE001 - shardings that cannot be compared are left to the aliases
            continue
        if not same:
            moved[leaf.flat_index] = (
                f"the array passed is placed as {value.sharding} but the compiled program takes "
                f"{leaf.sharding}, so jax first copies it and the donation frees that copy: your array "
                "stays allocated and is not deleted; place it with jax.device_put(x, <that sharding>) or "
                "pass the previous step's output")
    return moved


def _unless_moved(result: LeafDonation, reason: str | None) -> LeafDonation:
    if reason is None or not result.aliased:
        return result
    return replace(result, aliased=False, output=None, reason_code=INPUT_RESHARDED, reason=reason)


def repeated_buffers(leaves: list[ArgLeaf], values: list, wanted: list[bool]) -> dict[int, LeafDonation]:
    """Donated leaves whose array is passed more than once: the real call fails.

    XLA refuses ``f(donate(a), a)`` ("Attempt to use a buffer that was previously
    donated") and ``f(donate(a), donate(a))`` ("Attempt to donate the same buffer
    twice"); compiling never sees it, only the arrays' identity does.
    """
    import jax

    if len(values) != len(leaves):
        return {}
    positions: dict[int, list[int]] = {}
    for index, value in enumerate(values):
        if isinstance(value, jax.Array):
            positions.setdefault(id(value), []).append(index)
    found = {}
    for same in positions.values():
        if len(same) < 2 or not any(wanted[i] for i in same):
            continue
        paths = ", ".join(f"`{leaves[i].path}`" for i in same)
        for i in same:
            if wanted[i]:
                found[leaves[i].flat_index] = _leaf_result(leaves[i], False, code=DONATED_TWICE, reason=(
                    f"the same array is passed as {paths}; a donated buffer cannot also be passed again, so "
                    "the real call fails (\"Attempt to donate the same buffer twice\" or \"Attempt to use a "
                    "buffer that was previously donated\"): pass a copy (jnp.copy) or pass it once"))
    return found


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


def _leaf_result(leaf: ArgLeaf, aliased: bool, output=None, code=None, reason=None) -> LeafDonation:
    return LeafDonation(
        path=leaf.path, parameter=leaf.parameter, parameter_index=leaf.parameter_index,
        shape=leaf.shape, dtype=leaf.dtype, nbytes=leaf.nbytes,
        sharding=_sharding_text(leaf.sharding), aliased=aliased, output=output,
        reason_code=code, reason=reason,
    )


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
        return _leaf_result(leaf, aliased, output, code, reason)

    def _why_not(self, leaf: ArgLeaf, address) -> tuple[str, str]:
        import jax

        if not leaf.donated:
            if jax.config.jax_debug_nans:
                return DEBUG_NANS, "jax_debug_nans is on, and JAX silently turns donation off while it is"
            if leaf.keyword:
                return NOT_DONATED, ("it is passed by keyword, and jax.pmap donates only positional "
                                     "arguments: pass it positionally")
            return NOT_DONATED, "JAX did not mark it donated"
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
