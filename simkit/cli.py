"""The ``simkit`` command: ``models``, ``run``, ``validate``; ``simkit --version``.

Errors a command-line user can fix (a bad argument, a file that cannot be written) are one
line on stderr, ``simkit: error: ...``, and exit status 2; ``validate`` exits with 1 when a
case is outside its bound. Imports flow one way: this module uses `simkit.validation`,
never the reverse (``python -m simkit.validation`` has its own small entry point).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import __version__
from .errors import InputError, SimkitError


def _parse_set(items: Sequence[str]) -> dict[str, float]:
    out = {}
    for item in items:
        if "=" not in item:
            raise InputError(f"--set expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise InputError(f"--set: value of {k.strip()!r} is not a number: {v!r}") from None
    return out


def _check_writable_file(path: str | None, option: str) -> None:
    """Refuse an output file that cannot be written, before any work is done."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InputError(f"{option} {path}: is a directory, expected a file name")
    if not os.path.isdir(folder):
        raise InputError(f"{option} {path}: {folder} is not an existing folder")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{option} {path}: the folder {folder} is not writable")


def _check_plot_format(path: str | None) -> None:
    """Refuse a ``--plot`` file whose suffix matplotlib cannot write, before solving."""
    suffix = os.path.splitext(path or "")[1].lstrip(".").lower()
    if not suffix:
        return
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise InputError(f"--plot {path}: matplotlib cannot write .{suffix} files; use one of "
                         f"{', '.join(sorted(formats))}")


def _check_writable_dir(path: str, option: str) -> None:
    """Create the output folder (as the report would) or refuse it, before any work is done."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot create the folder ({exc.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path}: the folder is not writable")


def _cmd_models(args: argparse.Namespace) -> int:
    from . import models

    for name in models.names("ode"):
        m = models.get(name)
        kind = "stiff" if m.stiff else "non-stiff"
        print(f"{name:24s} {m.n_states:2d} states  {kind:9s}  {m.description}")
        if args.verbose:
            print(f"{'':24s} params: {m.params}")
            print(f"{'':24s} source: {m.source}")
    for name in models.names("pde"):
        m = models.get(name)
        grid = "x".join(map(str, m.grid.shape))
        print(f"{name:24s} PDE {grid:>11s} x {m.n_components}  {m.description}")
        if args.verbose:
            print(f"{'':24s} params: {m.params}")
            print(f"{'':24s} source: {m.source}")
    return 0


def _fast_settings() -> None:
    """This process is simkit's own: its fast CPU settings, each unless the environment sets it
    (`simkit._config.configure_own_process`), before JAX starts."""
    from ._config import configure_own_process

    configure_own_process()


def _cmd_run(args: argparse.Namespace) -> int:
    _fast_settings()
    import numpy as np

    from . import models, solve

    model = models.get(args.model)
    if not hasattr(model, "state_names"):
        raise InputError(f"{args.model!r} is a PDE model; run it from Python with "
                         "simkit.stencil.integrate(...) or simkit.solve(...)")
    params = _parse_set(args.set or [])
    _check_writable_file(args.plot, "--plot")
    _check_plot_format(args.plot)
    _check_writable_file(args.csv, "--csv")
    t_span = None
    if args.t0 is not None or args.t1 is not None:
        t_span = (model.t_span[0] if args.t0 is None else args.t0, model.t_span[1] if args.t1 is None else args.t1)
    key = None
    if model.diffusion is not None:
        import jax

        key = jax.random.key(args.seed)
    sol = solve(model, t_span, params=params, saveat=args.saveat, rtol=args.rtol, atol=args.atol,
                key=key)
    print(sol)
    print("stats:", {k: int(v) for k, v in sol.stats.items()})
    # 9 significant digits (round(8) printed Robertson's y2 = 8.3e-12 as 0.0)
    print("final state:", dict(zip(sol.state_names, [float(f"{v:.9g}") for v in np.asarray(sol.y_final).tolist()])))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        ax = sol.plot()
        plot = args.plot if os.path.splitext(args.plot)[1] else args.plot + ".png"  # what savefig writes
        ax.figure.savefig(plot, dpi=110)
        print(f"wrote {plot}")
    if args.csv:
        header = ",".join(["t", *sol.state_names])
        np.savetxt(args.csv, np.column_stack([sol.ts, sol.ys]), delimiter=",", header=header, comments="")
        print(f"wrote {args.csv}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    _fast_settings()
    from .validation import run
    from .validation.report import default_out_dir

    out = args.out if args.out is not None else default_out_dir(args.quick, resume=args.resume)
    _check_writable_dir(out, "--out" if args.out is not None else "report folder")
    summary = run(out_dir=out, quick=args.quick, resume=args.resume)
    return 0 if summary["passed"] else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``simkit`` command."""
    parser = argparse.ArgumentParser(prog="simkit", description="Scientific simulation on JAX.")
    parser.add_argument("--version", action="version", version=f"simkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list the model library",
                       description="List the model library: each model's name, size, stiffness and "
                                   "description (ODE models, then PDE models).")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also show each model's default parameters and its source")
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("run", help="solve one library model",
                       description="Solve one ODE model of the library with simkit.solve and print the "
                                   "solution, its step statistics and the final state.",
                       epilog="example: simkit run lorenz --set rho=35 --t1 20 --plot lorenz.png")
    p.add_argument("model", help="a model name, as listed by `simkit models` (ODE models only)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override one model parameter (a number); repeat for several, "
                        "e.g. --set rho=35 --set beta=2.5")
    p.add_argument("--t0", type=float, metavar="T",
                   help="start time, in the model's time unit (default: the start of the model's t_span)")
    p.add_argument("--t1", type=float, metavar="T",
                   help="end time, in the model's time unit (default: the end of the model's t_span)")
    p.add_argument("--saveat", type=int, default=1001, metavar="N",
                   help="number of equally spaced save times from t0 to t1, both included "
                        "(default: %(default)s)")
    p.add_argument("--rtol", type=float, default=1e-8,
                   help="relative tolerance of the adaptive step (default: %(default)g)")
    p.add_argument("--atol", type=float, default=1e-10,
                   help="absolute tolerance of the adaptive step, in the state's units "
                        "(default: %(default)g)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed of the Brownian motion (stochastic models only; default: %(default)s)")
    p.add_argument("--plot", metavar="FILE",
                   help="write a figure of every state against time; the suffix chooses the format "
                        "(.png, .pdf, .svg, ...; .png is added when there is none)")
    p.add_argument("--csv", metavar="FILE",
                   help="write the saved solution as CSV: a header line, then one row per save time "
                        "(t, then one column per state)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("validate", help="reproduce the validation report",
                       description="Run every validation case (simkit against SciPy, exact solutions and "
                                   "published values), write the report (markdown and figures) and exit "
                                   "with 1 when a case is outside its bound.")
    p.add_argument("--quick", action="store_true",
                   help="a faster run: fewer tolerances in the work-precision cases")
    p.add_argument("--out", help="output folder (default: validation/report; with --quick, "
                   "a new folder simkit-validation-quick-<date>-<time> here)")
    p.add_argument("--resume", action="store_true",
                   help="continue a run that stopped, in the same folder: the parts it finished "
                        "(kept in <folder>/.partial until the report is written) are not run again")
    p.set_defaults(func=_cmd_validate)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SimkitError as exc:  # a clear one-line error for command-line users
        print(f"simkit: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a write that failed after the checks (disk full, races)
        where = f" {exc.filename}" if exc.filename else ""
        print(f"simkit: error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


def _one_line(message: str) -> str:
    return " ".join(message.split())


if __name__ == "__main__":
    raise SystemExit(main())
