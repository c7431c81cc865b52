"""BDF's factor reuse: ``refactor_ratio=0`` (the factors of I - c J remade
whenever c changes, SciPy's rule) against 0.3 (kept while c moves by under 30 %, CVODE's rule).

    python benchmarks/experiments/refactor_ratio_ab.py [--rounds 7] [--out FILE]

Robertson to 1e5, HIRES and van der Pol (mu = 1000) at rtol 1e-4 ... 1e-10 (atol = rtol x each
problem's smallest significant component, as `benchmarks/stiff.py`), POLLU (20 states) at 1e-6
and 1e-10, the 1-D Brusselator of `benchmarks/bdf_size.py` dense at 20 ... 256 states (rtol 1e-6
and 1e-9) and banded at 3,200 and 6,400 (1e-6), and the 2-D Brusselator of
`benchmarks/stiff_mol.py` as a plain ODEModel (banded, 1,152 and 2,048 states, 1e-6). Every
row sets ``refactor_ratio`` explicitly (the default is 0 up to 128 states, 0.3 above). One process, both settings compiled first, then
interleaved rounds (3 for the Brusselators); medians. Error: against the problem's reference
(`stiff.reference_state`) where it has one, else against the ``refactor_ratio=0`` result.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import bdf_size  # noqa: E402  (benchmarks/, run as scripts)
import simkit  # noqa: E402
import stiff  # noqa: E402
import stiff_mol  # noqa: E402
from simkit import models  # noqa: E402

RATIOS = (0.0, 0.3)


def cases():
    out = []
    for name in ("robertson_1e5", "hires", "van_der_pol_1000"):
        model_name, t1, scale, _ = stiff.PROBLEMS[name]
        ref = stiff.reference_state(name)
        for rtol in (1e-4, 1e-6, 1e-8, 1e-10):
            out.append((f"{name} {rtol:g}", models.get(model_name), t1, rtol, rtol * scale, ref, scale))
    for rtol in (1e-6, 1e-10):
        out.append((f"pollu {rtol:g}", models.get("pollu"), 60.0, rtol, rtol * 1e-8, None, 1.0))
    for n in (10, 25, 50, 75, 128):  # dense
        for rtol in (1e-6, 1e-9):
            out.append((f"brusselator_1d {2 * n} {rtol:g}", bdf_size.brusselator_jax(n), 10.0, rtol, rtol, None, 1.0))
    for n in (1600, 3200):  # banded
        out.append((f"brusselator_1d {2 * n}", bdf_size.brusselator_jax(n), 10.0, 1e-6, 1e-6, None, 1.0))
    for n in (24, 32):
        out.append((f"brusselator_2d {2 * n * n}", stiff_mol.plain(n), stiff_mol.T1, 1e-6, 1e-6, None, 1.0))
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "results", "refactor_ratio_ab.json"))
    args = ap.parse_args(argv)
    rows = {}
    for label, m, t1, rtol, atol, ref, scale in cases():
        def call(r):
            return jax.block_until_ready(simkit.solve(m, (0.0, t1), saveat=1, rtol=rtol, atol=atol, throw=False,
                                                      solver=simkit.BDF(refactor_ratio=r)))

        sols = {r: call(r) for r in RATIOS}
        times = {r: [] for r in RATIOS}
        for _ in range(args.rounds if "brusselator_2d" not in label and "3200" not in label and "6400" not in label else 3):
            for r in RATIOS:
                start = time.perf_counter()
                call(r)
                times[r].append(time.perf_counter() - start)
        base = np.asarray(sols[0.0].ys[-1])
        row = {}
        for r in RATIOS:
            y, st = np.asarray(sols[r].ys[-1]), sols[r].stats
            err = stiff.error(y, ref, scale) if ref is not None else float(np.max(np.abs(y - base) / (np.abs(base) + 1)))
            row[str(r)] = dict(ms=1e3 * statistics.median(times[r]), error=err, status=int(sols[r].status),
                               steps=int(st["num_steps"]), lu=int(st["num_lu_decompositions"]),
                               jacobians=int(st["num_jacobians"]), rhs=int(st["num_rhs"]))
        row["speedup"] = row["0.0"]["ms"] / row["0.3"]["ms"]
        rows[label] = row
        a, b = row["0.0"], row["0.3"]
        print(f"{label:24s} ratio 0: {a['ms']:8.2f} ms err {a['error']:.1e} steps {a['steps']:5d} LU {a['lu']:4d} | "
              f"0.3: {b['ms']:8.2f} ms err {b['error']:.1e} steps {b['steps']:5d} LU {b['lu']:4d} | "
              f"{row['speedup']:.2f}x", flush=True)
    result = dict(command="python benchmarks/experiments/refactor_ratio_ab.py " + " ".join(argv or sys.argv[1:]),
                  machine=stiff.machine(), rounds=args.rounds, rows=rows,
                  load_average_after=list(os.getloadavg()))
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print("wrote", args.out)
    return result


if __name__ == "__main__":
    main()
