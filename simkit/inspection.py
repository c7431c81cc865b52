"""`inspect`: the compiled program of a `simkit.solve` call, looked at from inside.

``simkit.inspect(model, t_span, **solve_kwargs)`` takes exactly what `simkit.solve` takes, goes
through the same preparation (`simkit._prepare.prepare`: the same checks and errors, before
anything compiles), lowers and compiles the same ``jax.jit`` program that `solve` would run
(`simkit.engines.entry`), and returns an `Inspection`: the lowering and compile times, XLA's
cost analysis and counts read from the optimised HLO (``compiled.as_text()``), including what
one iteration of each while loop runs. Nothing is executed. The compiled program stays in
JAX's cache, so a `solve` with the same structure afterwards does not compile again.
"""

from __future__ import annotations

import dataclasses
import inspect as _pyinspect
import re
import time
from collections.abc import Sequence
from typing import Any

from . import _config, engines
from ._prepare import prepare
from ._solve import _trivial, solve
from .engines.programs import KernelProgram
from .errors import InputError, InputTypeError

__all__ = ["Inspection", "LoopAnatomy", "inspect"]

# Instructions that are no work at run time (no thunk on XLA:CPU): they name buffers.
_FREE = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "opt-barrier",
                   "after-all", "add-dependency", "domain"})
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s+\(.*->.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*.*?\s([a-z][a-z0-9\-]*)\((.*)$")
_REF = re.compile(r"\b(calls|body|condition|to_apply|true_computation|false_computation)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_SMALL_CALL = 'xla_cpu_small_call="true"'  # a call XLA:CPU compiles into one kernel
_FRAME = re.compile(r"stack_frame_id=(\d+)")
_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


@dataclasses.dataclass(frozen=True)
class LoopAnatomy:
    """One ``while`` loop of a compiled program: what one of its iterations runs.

    Counts are of the loop's body and condition computations (both run once per iteration)
    and of the computations they call (``call``), not of nested loops (listed on their own)
    nor of the branches of a conditional (``branch_thunks``). A thunk is one operation that
    XLA's runtime executes: a fusion, a copy, a custom-call, a nested loop or conditional, or
    any other unfused operation; tuples, parameters and bitcasts cost nothing and are not counted.

    Attributes
    ----------
    name : str
        The ``while`` instruction's name in the HLO text.
    depth : int
        0 for a loop of the entry computation, 1 for a loop inside its body, and so on.
    trip_count : int or None
        The number of iterations, where XLA knows it (a ``fori_loop``); None for a loop that
        ends on a condition of the data, such as the adaptive stepping loop.
    thunks, fusions, copies, custom_calls, while_loops, conditionals : int
        Per iteration: thunks in all, and of them fusions, copies, custom-calls, nested loops
        and conditionals.
    branch_thunks : int
        Thunks in the largest branch of each conditional of the loop, summed (run only when
        that branch is taken).
    source : str
        Where the loop was written (``file:line (function)``) when the HLO records it, else "".
    parent : str or None
        The name of the loop whose iteration runs this one (None at the top level).
    in_branch : bool
        Whether the loop sits in a branch of a conditional of its parent's iteration (it runs
        only when that branch is taken), not in every iteration.
    kernel : bool
        Whether XLA:CPU compiled the loop, with the computation around it, into one kernel
        (a ``call`` marked ``xla_cpu_small_call``: its body reads and writes fewer bytes than
        the small-loop threshold, `simkit._config`): its operations then run as straight
        code, not as thunks dispatched one by one, and cost no ~20 ns each.

    Examples
    --------
    >>> import simkit
    >>> info = simkit.inspect(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
    >>> loop = info.stepping_loop  # a LoopAnatomy
    >>> loop.trip_count is None, loop.fusions <= loop.thunks
    (True, True)
    """

    name: str
    depth: int
    trip_count: int | None
    thunks: int
    fusions: int
    copies: int
    custom_calls: int
    while_loops: int
    conditionals: int
    branch_thunks: int
    source: str = ""
    parent: str | None = None
    in_branch: bool = False
    kernel: bool = False

    def describe(self) -> str:
        """One line: where the loop is, how often it runs and what one iteration runs.

        Returns
        -------
        str
            ``"<name> at <source> (depth d, <trip count>): n thunks per iteration: ..."``.

        Examples
        --------
        >>> import simkit
        >>> info = simkit.inspect(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
        >>> "thunks per iteration" in info.stepping_loop.describe()
        True
        """
        runs = f"{self.trip_count} iterations" if self.trip_count is not None else "data-dependent trip count"
        where = f" at {self.source}" if self.source else ""
        if self.parent is not None:
            runs += f"; {'in a branch of ' if self.in_branch else 'in '}{self.parent}"
        parts = [_plural(self.fusions, "fusion"), _plural(self.copies, "copy", "copies")]
        if self.custom_calls:
            parts.append(_plural(self.custom_calls, "custom-call"))
        if self.while_loops:
            parts.append(_plural(self.while_loops, "nested loop"))
        if self.conditionals:
            parts.append(f"{_plural(self.conditionals, 'conditional')} (+ up to {self.branch_thunks} "
                         "thunks in their branches)")
        if self.kernel:
            return (f"{self.name}{where} (depth {self.depth}, {runs}): one kernel (XLA:CPU's small-loop call), "
                    f"{self.thunks} operations per iteration: " + ", ".join(parts))
        return (f"{self.name}{where} (depth {self.depth}, {runs}): {self.thunks} thunks per iteration: "
                + ", ".join(parts))


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


@dataclasses.dataclass(frozen=True, repr=False)
class Inspection:
    """What `simkit.inspect` found: times, XLA's cost analysis and the optimised HLO's anatomy.

    Attributes
    ----------
    model : str
        The model's name.
    engine : str
        ``"kernel"`` (simkit's fused kernels) or ``"diffrax"``.
    method : str
        The solver, as ``Solution.solver_name`` names it (e.g. ``"simkit.Tsit5()"``).
    lower_seconds, compile_seconds : float
        Wall time of tracing and lowering to StableHLO, and of XLA's compilation, measured
        apart. A program this process compiled already (or JAX's persistent compilation cache
        holds) reports the time to fetch it: inspect before the first `solve` of a program to
        see its full compile time.
    flops, bytes_accessed, transcendentals : float or None
        XLA's cost analysis of the compiled program (None where XLA gives none). XLA counts
        the body of every while loop once, whatever its trip count: these are the cost of the
        code, one pass through each loop, not of a whole solve.
    cost : dict
        Every scalar entry of XLA's cost analysis by its XLA name (e.g. ``"bytes accessed"``,
        ``"optimal_seconds"``).
    fusions, while_loops, copies, custom_calls, conditionals : int
        Operations in the optimised program, counted once each wherever they are (in the entry
        computation, loop bodies and branches; the operations inside a fusion are one fusion).
    loops : tuple of LoopAnatomy
        Every while loop, outermost first (each loop followed by the loops inside it), with what
        one iteration runs; a loop in a computation called from two places is listed twice.
    compiler_options : dict
        The XLA options the program compiled with besides ``XLA_FLAGS``: on a CPU, a kernel
        solve (any size) or a diffrax solve of at most 64 states gets XLA:CPU's classic code
        generator, ``{"xla_cpu_use_fusion_emitters": False}``, which compiles these programs in
        about half the time and runs them as fast or faster (`simkit._codegen`); ``{}``: XLA's
        defaults.

    Examples
    --------
    >>> import simkit
    >>> info = simkit.inspect(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
    >>> info.engine, info.method, info.while_loops == len(info.loops)
    ('kernel', 'simkit.Tsit5()', True)
    """

    model: str
    engine: str
    method: str
    lower_seconds: float
    compile_seconds: float
    flops: float | None
    bytes_accessed: float | None
    transcendentals: float | None
    cost: dict
    fusions: int
    while_loops: int
    copies: int
    custom_calls: int
    conditionals: int
    loops: tuple[LoopAnatomy, ...]
    compiler_options: dict
    _hlo_text: str = dataclasses.field(repr=False, compare=False)

    def hlo(self) -> str:
        """The optimised HLO text of the compiled program (``compiled.as_text()``).

        Returns
        -------
        str
            XLA's text of the optimised module.

        Examples
        --------
        >>> import simkit
        >>> info = simkit.inspect(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
        >>> info.hlo().startswith("HloModule")
        True
        """
        return self._hlo_text

    @property
    def stepping_loop(self) -> LoopAnatomy | None:
        """The adaptive stepping loop (one iteration per attempted step), or None.

        Read from the HLO, not from simkit's code: of the loops whose trip count depends on
        the data, the one that runs the most thunks per iteration counting its nested loops
        once (an implicit method's Newton loop sits inside the stepping loop).

        Returns
        -------
        LoopAnatomy or None
            That loop; None when no loop's trip count depends on the data.

        Examples
        --------
        >>> import simkit
        >>> info = simkit.inspect(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
        >>> step = info.stepping_loop
        >>> step.trip_count is None and step.fusions > 0
        True
        """
        data = [lp for lp in self.loops if lp.trip_count is None]
        if not data:
            return None

        def inside(lp: LoopAnatomy) -> int:
            i = self.loops.index(lp)
            nested = 0
            for other in self.loops[i + 1:]:
                if other.depth <= lp.depth:
                    break
                nested += other.thunks
            return lp.thunks + nested

        return max(data, key=lambda lp: (inside(lp), -lp.depth))

    def summary(self) -> str:
        """A few lines for a person: times, costs, counts and each loop's anatomy.

        Returns
        -------
        str
            The report, one loop per line (the stepping loop marked).

        Examples
        --------
        >>> import simkit
        >>> info = simkit.inspect(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
        >>> print(info.summary())  # doctest: +ELLIPSIS
        simkit.inspect: model 'lorenz', simkit.Tsit5() (kernel engine)
        ...
        """

        def num(x: float | None) -> str:
            return "n/a" if x is None else f"{x:,.0f}"

        lines = [
            f"simkit.inspect: model {self.model!r}, {self.method} ({self.engine} engine)",
            f"  lowering {self.lower_seconds:.3f} s, compiling {self.compile_seconds:.3f} s"
            + (" (XLA:CPU's classic code generator)" if self.compiler_options.get("xla_cpu_use_fusion_emitters") is False
               else ""),
            f"  XLA cost analysis (each loop body counted once): {num(self.flops)} flops, "
            f"{num(self.bytes_accessed)} bytes accessed, {num(self.transcendentals)} transcendentals",
            f"  optimised HLO: {_plural(self.fusions, 'fusion')}, {_plural(self.while_loops, 'while loop')}, "
            f"{_plural(self.copies, 'copy', 'copies')}, {_plural(self.custom_calls, 'custom-call')}, "
            f"{_plural(self.conditionals, 'conditional')}",
        ]
        step = self.stepping_loop
        for lp in self.loops:
            mark = "stepping loop " if lp is step else ""
            lines.append(f"  {mark}{lp.describe()}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        step = self.stepping_loop
        per_step = f", {step.thunks} thunks per step" if step is not None else ""
        flops = "n/a" if self.flops is None else f"{self.flops:.0f}"
        return (f"Inspection({self.model!r}, {self.method}, {self.engine} engine: compile "
                f"{self.compile_seconds:.3g} s, {flops} flops, {self.fusions} fusions, "
                f"{self.while_loops} while loops, {self.copies} copies, {self.custom_calls} custom-calls"
                f"{per_step})")


@_config.simkit_call()
def inspect(model: Any, t_span: Sequence[float] | None = None, **solve_kwargs: Any) -> Inspection:
    """Compile the program `simkit.solve` would run for these arguments, and look inside it.

    Nothing runs: the call is prepared as `solve` prepares it (the same checks and errors),
    then the same ``jax.jit`` program is lowered and compiled
    (``jax.jit(...).lower(...).compile()``), timed, and read: XLA's cost analysis and the
    optimised HLO text. The compiled program stays in JAX's cache: a `solve` of the same
    structure afterwards does not compile again.

    Parameters
    ----------
    model : ODEModel or PDEModel
        The model, as for `simkit.solve`.
    t_span : (float, float), optional
        ``(t0, t1)``, as for `simkit.solve`; ``t0 != t1`` (``t0 == t1`` runs no program).
    **solve_kwargs
        Any other argument of `simkit.solve` (``y0``, ``params``, ``saveat``, ``solver``,
        ``rtol``, ...). Only the structure matters to the program (solver, events, the number
        of save times, ``max_steps``, dense output, shapes and dtypes); numbers do not change
        it. ``throw`` is accepted and changes nothing: it acts after the program runs.

    Returns
    -------
    Inspection
        Engine and method, lowering and compile times, XLA's flops, bytes accessed and
        transcendentals, the counts of fusions, while loops, copies, custom-calls and
        conditionals in the optimised HLO, each while loop's per-iteration anatomy
        (``.loops``, ``.stepping_loop``) and the HLO text (``.hlo()``); ``.summary()`` for
        reading.

    Raises
    ------
    InputError, ShapeError, ParameterError, InputTypeError
        What `simkit.solve` raises for the same bad input, before compiling. Also
        `InputError` for ``t0 == t1`` or an empty state (`solve` then returns ``y0`` without
        a compiled program) and `InputTypeError` for traced inputs (inside
        ``jax.jit``/``vmap``/``grad``: inspect on concrete values).
    TypeError
        An argument `simkit.solve` does not take.

    Examples
    --------
    >>> import simkit
    >>> info = simkit.inspect(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
    >>> info.engine, info.method
    ('kernel', 'simkit.Tsit5()')
    >>> info.compile_seconds > 0 and info.flops > 0 and info.fusions > 0
    True
    >>> step = info.stepping_loop      # one iteration per attempted step
    >>> step.trip_count is None and step.fusions > 0
    True
    >>> print(info.summary())          # doctest: +ELLIPSIS
    simkit.inspect: model 'lorenz', simkit.Tsit5() (kernel engine)
    ...
    """
    bound = _pyinspect.signature(solve).bind(model, t_span, **solve_kwargs)
    bound.apply_defaults()
    kwargs = dict(bound.arguments)
    kwargs.pop("throw")  # acts on the result, not on the program
    kwargs.pop("device")  # inspect compiles for JAX's default device
    plan = prepare(**kwargs)
    if plan.traced:
        raise InputTypeError("simkit.inspect compiles a program for concrete inputs: call it outside "
                             "jax.jit/vmap/grad (the program depends on shapes and dtypes only)")
    if _trivial(plan) is not None:
        raise InputError("t0 == t1 (or an empty state): simkit.solve returns y0 without running a compiled "
                         "program, so there is nothing to inspect; give a span with t0 != t1")
    engine, call_args = engines.entry(plan.program, plan.args)
    start = time.perf_counter()
    lowered = engine.lower(*call_args)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    compiled_at = time.perf_counter()
    text = compiled.as_text()
    cost = _cost(compiled)
    anatomy = _anatomy(text)
    return Inspection(
        model=plan.model.name, engine="kernel" if isinstance(plan.program, KernelProgram) else "diffrax",
        method=plan.solver_name, lower_seconds=lowered_at - start, compile_seconds=compiled_at - lowered_at,
        flops=cost.get("flops"), bytes_accessed=cost.get("bytes accessed"),
        transcendentals=cost.get("transcendentals"), cost=cost, compiler_options=engine.compiler_options(*call_args),
        _hlo_text=text, **anatomy,
    )


def _cost(compiled: Any) -> dict:
    """XLA's cost analysis as one dict of its scalar entries: JAX returns a dict, older
    versions a list of them (one per program; summed), and some backends None."""
    try:
        raw = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - a backend without cost analysis: no numbers, not an error
        return {}
    parts = [raw] if isinstance(raw, dict) else list(raw or [])
    total: dict[str, float] = {}
    for part in parts:
        for key, value in (part or {}).items():
            # per-operand entries ("bytes accessed0{}", "utilization1{}") are left out
            if "{" in key or not isinstance(value, (int, float)):
                continue
            total[key] = total.get(key, 0.0) + float(value)
    return total


# -- reading the optimised HLO text ------------------------------------------------------------


def _parse(text: str) -> tuple[dict[str, list[tuple[str, str, str]]], str | None, dict[str, str]]:
    """Computations (name -> [(instruction, opcode, rest of line)]), the entry's name and each
    instruction's source (``file:line (function)``) by its stack frame, where recorded."""
    comps: dict[str, list[tuple[str, str, str]]] = {}
    entry, current, section = None, None, None
    tables: dict[str, dict[int, str]] = {s: {} for s in _SECTIONS}
    for line in text.splitlines():
        if current is not None:
            if line.startswith("}"):
                current = None
                continue
            m = _INSTRUCTION.match(line)
            if m:
                comps[current].append((m.group(1), m.group(2), m.group(3)))
            continue
        stripped = line.strip()
        if stripped in _SECTIONS:
            section = stripped
            continue
        if not stripped:
            section = None
            continue
        m = _HEADER.match(line)
        if m:
            current, section = m.group(2), None
            comps[current] = []
            if m.group(1):
                entry = current
            continue
        if section is not None:
            key, _, value = stripped.partition(" ")
            if key.isdigit():
                tables[section][int(key)] = value
    return comps, entry, _frames(tables)


def _frames(tables: dict[str, dict[int, str]]) -> dict[str, str]:
    """stack frame id (as text) -> ``file:line (function)`` of its innermost location."""
    files = {k: v.strip('"') for k, v in tables["FileNames"].items()}
    funcs = {k: v.strip('"') for k, v in tables["FunctionNames"].items()}
    out = {}
    for frame, value in tables["StackFrames"].items():
        loc = re.search(r"file_location_id=(\d+)", value)
        where = tables["FileLocations"].get(int(loc.group(1))) if loc else None
        if where is None:
            continue
        fields = dict(re.findall(r"(\w+)=(\d+)", where))
        path = files.get(int(fields.get("file_name_id", -1)), "?")
        tail = _short_path(path)
        func = funcs.get(int(fields.get("function_name_id", -1)), "?")
        out[str(frame)] = f"{tail}:{fields.get('line', '?')} ({func})"
    return out


def _short_path(path: str) -> str:
    """``simkit/kernels/loop.py`` or ``equinox/...``: from the package, not the whole path."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    if "/simkit/" in path:
        return "simkit/" + path.rsplit("/simkit/", 1)[1]
    return path.rsplit("/", 1)[-1]


def _callees(rest: str, opcode: str) -> list[tuple[str, str]]:
    """(role, computation) that an instruction runs as control flow (not fused code)."""
    out = []
    for role, name in _REF.findall(rest):
        if role in ("body", "condition", "true_computation", "false_computation") or (
                role in ("calls", "to_apply") and opcode in ("call", "async-start")):
            out.append((role, name))
    for group in _BRANCHES.findall(rest):
        out.extend(("branch", b.strip().lstrip("%")) for b in group.split(",") if b.strip())
    return out


def _counts(ops: list[tuple[str, str, str]]) -> dict[str, int]:
    kinds = [op for _, op, _ in ops]
    return dict(
        thunks=sum(op not in _FREE for op in kinds), fusions=kinds.count("fusion"), copies=kinds.count("copy"),
        custom_calls=kinds.count("custom-call"), while_loops=kinds.count("while"),
        conditionals=kinds.count("conditional"),
    )


def _anatomy(text: str) -> dict[str, Any]:
    """Whole-program counts and the per-iteration anatomy of every while loop."""
    comps, entry, frames = _parse(text)
    if entry is None:
        return dict(fusions=0, while_loops=0, copies=0, custom_calls=0, conditionals=0, loops=())

    def inlined(name: str, seen: frozenset = frozenset()) -> list[tuple[str, str, str]]:
        """A computation's instructions with those of the computations it ``call``s."""
        ops = []
        for ins, op, rest in comps.get(name, []):
            ops.append((ins, op, rest))
            if op in ("call", "async-start") and name not in seen:
                for _, callee in _callees(rest, op):
                    ops.extend(inlined(callee, seen | {name}))
        return ops

    def reachable(roots: list[str]) -> list[str]:
        """The computations ``roots`` run, directly or through the computations they call."""
        found, todo = [], list(roots)
        while todo:
            name = todo.pop()
            if name in found or name not in comps:
                continue
            found.append(name)
            for _, op, rest in comps[name]:
                todo.extend(callee for _, callee in _callees(rest, op))
        return found

    # every computation that runs as control flow (entry, loop bodies and conditions, branches)
    executed = reachable([entry])
    total = _counts([ins for name in executed for ins in comps[name]])

    # instructions that XLA:CPU runs inside one kernel: everything a small-loop call reaches
    small_calls = [c for name in comps for _, op, rest in comps[name] if op == "call" and _SMALL_CALL in rest
                   for _, c in _callees(rest, op)]
    in_kernel = {ins for name in reachable(small_calls) for ins, _, _ in comps[name]}

    loops: list[LoopAnatomy] = []

    def visit(name: str, depth: int, seen: frozenset, parent: str | None, in_branch: bool) -> None:
        for ins, op, rest in inlined(name):
            callees = _callees(rest, op)
            if op == "while":
                body = next((c for r, c in callees if r == "body"), None)
                cond = next((c for r, c in callees if r == "condition"), None)
                ops = inlined(body) + inlined(cond) if body else []
                branch = 0
                for _, bop, brest in ops:
                    if bop == "conditional":
                        branch += max((_counts(inlined(c))["thunks"] for _, c in _callees(brest, bop)), default=0)
                trip = _TRIP_COUNT.search(rest)
                frame = _FRAME.search(rest)
                loops.append(LoopAnatomy(
                    name=ins, depth=depth, trip_count=int(trip.group(1)) if trip else None,
                    branch_thunks=branch, source=frames.get(frame.group(1), "") if frame else "",
                    parent=parent, in_branch=in_branch, kernel=ins in in_kernel, **_counts(ops)))
                for _, c in callees:
                    if c not in seen:
                        visit(c, depth + 1, seen | {c}, ins, False)
            elif op == "conditional":
                for _, c in callees:
                    if c not in seen:
                        visit(c, depth, seen | {c}, parent, parent is not None)

    visit(entry, 0, frozenset({entry}), None, False)
    return dict(loops=tuple(loops), **{k: v for k, v in total.items() if k != "thunks"})

