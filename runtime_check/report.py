"""The verifier's report: plain data, JSON and a readable table, JXM201 findings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from jaxmem.findings import Confidence, Finding, Severity, Span
from jaxmem.runtime_check.units import format_bytes

# Why a donated leaf was not reused; the code is stable (JSON), the text is for people.
NO_MATCHING_OUTPUT = "no-matching-output"
ELEMENT_COUNT_ONLY = "element-count-only"
OUTPUTS_TAKEN = "outputs-taken"
SHARDING_MISMATCH = "sharding-mismatch"
PRUNED_UNUSED = "pruned-unused"
DEBUG_NANS = "debug-nans"
NOT_DONATED = "not-donated"
DONATED_TWICE = "donated-twice"
INPUT_RESHARDED = "input-resharded"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class MemoryFigures:
    """``Compiled.memory_analysis()`` of one variant, in bytes (``None``: not reported)."""

    argument_bytes: int | None
    output_bytes: int | None
    alias_bytes: int | None
    temp_bytes: int | None
    peak_bytes: int | None
    generated_code_bytes: int | None = None


@dataclass(frozen=True)
class LeafDonation:
    """One donated pytree leaf and what XLA did with it."""

    path: str
    parameter: str
    parameter_index: int | None
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    sharding: str | None
    aliased: bool
    output: str | None = None
    reason_code: str | None = None
    reason: str | None = None

    @property
    def type_text(self) -> str:
        """``float32[4,4]``: dtype and shape the way jax prints avals."""
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Measurement:
    """Peak device memory measured by running each variant in its own process."""

    available: bool
    note: str
    peak_with_donation: int | None = None
    peak_without_donation: int | None = None
    donated_inputs_deleted: bool | None = None
    allocator_settings: dict = field(default_factory=dict)

    @property
    def measured_saving(self) -> int | None:
        """Measured peak without donation minus peak with it."""
        if self.peak_with_donation is None or self.peak_without_donation is None:
            return None
        return self.peak_without_donation - self.peak_with_donation


@dataclass
class VerifyReport:
    """Everything ``verify`` found out about one function's donation."""

    function: str
    definition_path: str | None
    definition_line: int | None
    backend: str
    donate_argnums: tuple[int, ...]
    donate_argnames: tuple[str, ...]
    with_donation: MemoryFigures
    without_donation: MemoryFigures
    leaves: list[LeafDonation]
    measurement: Measurement | None = None
    notes: list[str] = field(default_factory=list)
    signature: str | None = None
    donation_sources: dict = field(default_factory=dict)
    per_device_of: int | None = None  # jax.pmap: figures and leaf sizes are per device of this many
    donation_label: str | None = None  # the donation when it is not by position (eqx.filter_jit modes)
    saving_gap: dict | None = None  # why XLA's temporaries grew with donation (see verifier.saving_gap)

    @property
    def predicted_saving(self) -> int | None:
        """Compiled peak without donation minus compiled peak with it."""
        before, after = self.without_donation.peak_bytes, self.with_donation.peak_bytes
        if before is None or after is None:
            return self.with_donation.alias_bytes
        return before - after

    @property
    def donated_bytes(self) -> int:
        """Bytes of all leaves the donation asked for."""
        return sum(leaf.nbytes for leaf in self.leaves)

    @property
    def unusable(self) -> list[LeafDonation]:
        """The donated leaves no output reused."""
        return [leaf for leaf in self.leaves if not leaf.aliased]

    @property
    def ok(self) -> bool:
        """True when every donated leaf was reused."""
        return not self.unusable

    def findings(self) -> list[Finding]:
        """One JXM201 finding per unusable leaf, located at the definition."""
        path = self.definition_path or "<unknown>"
        line = self.definition_line or 1
        return [
            Finding(
                code="JXM201",
                path=path,
                span=Span(line, 0, line, 0),
                message=(
                    f"donated leaf {leaf.path} ({leaf.type_text}, {format_bytes(leaf.nbytes)}) "
                    f"of {self.function} is not reused by any output: {leaf.reason}"
                ),
                severity=Severity.WARNING,
                confidence=Confidence.HIGH,
                function=self.function,
                definition_path=self.definition_path,
                definition_line=self.definition_line,
                parameter_index=leaf.parameter_index,
                parameter_name=leaf.parameter,
            )
            for leaf in self.unusable
        ]

    def to_dict(self) -> dict:
        """A JSON-ready dict (sizes in bytes)."""
        data = asdict(self)
        data["predicted_saving_bytes"] = self.predicted_saving
        data["donated_bytes"] = self.donated_bytes
        data["ok"] = self.ok
        if self.measurement is not None:
            data["measurement"]["measured_saving"] = self.measurement.measured_saving
        return data

    def render_text(self) -> str:
        """A readable multi-line report with sizes in human units."""
        return render_report(self)

    @classmethod
    def from_dict(cls, data: dict) -> "VerifyReport":
        """Rebuild a report from :meth:`to_dict` (as stored in a record file)."""
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        fields["with_donation"] = MemoryFigures(**data["with_donation"])
        fields["without_donation"] = MemoryFigures(**data["without_donation"])
        fields["leaves"] = [LeafDonation(**{**leaf, "shape": tuple(leaf["shape"])}) for leaf in data["leaves"]]
        fields["donate_argnums"] = tuple(data.get("donate_argnums") or ())
        fields["donate_argnames"] = tuple(data.get("donate_argnames") or ())
        measurement = data.get("measurement")
        if measurement is not None:
            measurement = {k: v for k, v in measurement.items() if k != "measured_saving"}
            fields["measurement"] = Measurement(**measurement)
        return cls(**fields)


def _figure_rows(report: VerifyReport) -> list[tuple[str, str, str]]:
    names = [
        ("arguments", "argument_bytes"),
        ("outputs", "output_bytes"),
        ("aliased (output reuses input)", "alias_bytes"),
        ("XLA temporaries", "temp_bytes"),
        ("peak", "peak_bytes"),
    ]
    return [
        (label, format_bytes(getattr(report.without_donation, attr)),
         format_bytes(getattr(report.with_donation, attr)))
        for label, attr in names
    ]


def _table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = lambda row: "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
    return [line(header), line(tuple("-" * width for width in widths)), *map(line, rows)]


def render_report(report: VerifyReport) -> str:
    """Render one report as text (used by ``jaxmem verify``)."""
    where = (f" ({report.definition_path}:{report.definition_line})"
             if report.definition_path else "")
    status = "OK" if report.ok else f"{len(report.unusable)} donated leaf(s) NOT reused"
    lines = [f"{report.function}{where} on {report.backend}: {status}"]
    if report.signature:
        lines.append(f"  signature: {report.signature}")
    spec = []
    if report.donate_argnums:
        spec.append(f"donate_argnums={report.donate_argnums}")
    if report.donate_argnames:
        spec.append(f"donate_argnames={report.donate_argnames}")
    lines.append(f"  donation: {report.donation_label or ', '.join(spec) or 'none'}")
    scope = f" (per device, of {report.per_device_of})" if report.per_device_of else ""
    header = (f"compiled memory{scope}", "without donation", "with donation")
    lines += ["  " + row for row in _table(_figure_rows(report), header)]
    lines.append(
        f"  predicted saving: {format_bytes(report.predicted_saving)} "
        f"(donated {format_bytes(report.donated_bytes)} in {len(report.leaves)} leaves)"
    )
    lines.extend("  " + text for text in _gap_lines(report))
    leaf_rows = [
        (leaf.path, leaf.type_text, format_bytes(leaf.nbytes),
         f"yes -> {leaf.output}" if leaf.aliased else "NO")
        for leaf in report.leaves
    ]
    if leaf_rows:
        lines += ["  " + row for row in _table(leaf_rows, ("donated leaf", "type", "size", "reused"))]
    for leaf in report.unusable:
        lines.append(f"  JXM201 {leaf.path}: {leaf.reason}")
    if report.measurement is not None:
        lines.extend("  " + text for text in _measurement_lines(report))
    lines.extend(f"  note: {note}" for note in report.notes)
    return "\n".join(lines)


def _gap_lines(report: VerifyReport) -> list[str]:
    gap = report.saving_gap
    if not gap:
        return []
    temps = (f"XLA's temporaries grow from {format_bytes(gap['temp_bytes_without'])} to "
             f"{format_bytes(gap['temp_bytes_with'])} with donation")
    saving, reused = gap["saving_bytes"], gap["reused_bytes"]
    if saving is not None and saving < reused:
        lines = [f"saving gap: the donation reuses {format_bytes(reused)} but saves {format_bytes(saving)} "
                 f"({format_bytes(reused - saving)} less): {temps}"]
    else:
        lines = [f"temporaries: {temps} (the peak still drops by the reused bytes)"]
    copies = gap["extra_copies"]
    if copies:
        shown = ", ".join(f"{copy['of']} {copy['type']} ({format_bytes(copy['bytes'])})" for copy in copies[:4])
        more = f", and {len(copies) - 4} more" if len(copies) > 4 else ""
        lines.append(f"  cause: {len(copies)} copy instruction(s) only the donated program makes "
                     f"({format_bytes(gap['extra_copy_bytes'])}): {shown}{more}. An output is written into a donated "
                     "buffer whose old value is still needed (e.g. outputs that swap their inputs, or an "
                     "input read after its replacement is computed), so XLA copies it first")
    else:
        lines.append("  cause: the compiled module shows no extra copy; XLA scheduled buffers differently "
                     "(longer live ranges) to write outputs in place")
    return lines


def _measurement_lines(report: VerifyReport) -> list[str]:
    measured = report.measurement
    if not measured.available:
        return [f"measurement: unavailable - {measured.note}"]
    lines = [
        f"measured peak: without donation {format_bytes(measured.peak_without_donation)}, "
        f"with donation {format_bytes(measured.peak_with_donation)}",
    ]
    saving = measured.measured_saving
    predicted = report.predicted_saving
    ratio = f" ({saving / predicted:.3f} of predicted)" if saving is not None and predicted else ""
    lines.append(f"measured saving: {format_bytes(saving)}{ratio}")
    lines.append(f"donated inputs deleted after the call: {measured.donated_inputs_deleted}")
    if measured.allocator_settings:
        settings = ", ".join(f"{key}={value}" for key, value in measured.allocator_settings.items())
        lines.append(f"allocator settings: {settings}")
    if measured.note:
        lines.append(f"measurement note: {measured.note}")
    return lines
