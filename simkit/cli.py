"""The ``simkit`` command: ``models``, ``run``, ``validate``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _parse_set(items: Sequence[str]) -> dict[str, float]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"simkit run: --set expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise SystemExit(f"simkit run: value of {k!r} is not a number: {v!r}") from None
    return out


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


def _cmd_run(args: argparse.Namespace) -> int:
    import numpy as np

    from . import models, solve

    model = models.get(args.model)
    if not hasattr(model, "state_names"):
        print(f"error: {args.model!r} is a PDE model; run it from Python with "
              "simkit.stencil.integrate(...) or simkit.solve(...)", file=sys.stderr)
        return 2
    params = _parse_set(args.set or [])
    t_span = None
    if args.t1 is not None:
        t_span = (model.t_span[0] if args.t0 is None else args.t0, args.t1)
    key = None
    if model.diffusion is not None:
        import jax

        key = jax.random.key(args.seed)
    sol = solve(model, t_span, params=params, saveat=args.saveat, rtol=args.rtol, atol=args.atol,
                key=key)
    print(sol)
    print("stats:", {k: int(v) for k, v in sol.stats.items()})
    print("final state:", dict(zip(sol.state_names, np.asarray(sol.y_final).round(8).tolist())))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        ax = sol.plot()
        ax.figure.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")
    if args.csv:
        header = ",".join(["t", *sol.state_names])
        np.savetxt(args.csv, np.column_stack([sol.ts, sol.ys]), delimiter=",", header=header, comments="")
        print(f"wrote {args.csv}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from .validation import run

    summary = run(out_dir=args.out, quick=args.quick)
    return 0 if summary["passed"] else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``simkit`` command."""
    parser = argparse.ArgumentParser(prog="simkit", description="Scientific simulation on JAX.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list the model library")
    p.add_argument("-v", "--verbose", action="store_true", help="show parameters and sources")
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("run", help="solve one library model")
    p.add_argument("model")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="parameter override")
    p.add_argument("--t0", type=float)
    p.add_argument("--t1", type=float)
    p.add_argument("--saveat", type=int, default=1001)
    p.add_argument("--rtol", type=float, default=1e-8)
    p.add_argument("--atol", type=float, default=1e-10)
    p.add_argument("--seed", type=int, default=0, help="random seed (stochastic models)")
    p.add_argument("--plot", metavar="PNG")
    p.add_argument("--csv", metavar="CSV")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("validate", help="reproduce the validation report")
    p.add_argument("--quick", action="store_true", help="fewer tolerances in work-precision")
    p.add_argument("--out", default="validation/report", help="output directory")
    p.set_defaults(func=_cmd_validate)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # a clear one-line error for command-line users
        from .errors import SimkitError

        if isinstance(exc, SimkitError):
            print(f"simkit: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    raise SystemExit(main())
