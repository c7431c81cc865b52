"""SciPy's references for the model cases, stored: tests/data/model_references.npz.

`simkit.validation.cases.reference_solution` computes each model's SciPy reference (DOP853
at rtol 1e-13, Radau at rtol 1e-12) in SciPy's Python stepping loop: 36 s of the suite's CPU
time, 12-13 s each for the stiff oscillators. The tests read them from this file instead,
each stored with a fingerprint of everything it depends on (the model's rhs source, its
parameters, y0, the span, the save count, SciPy's method and tolerances). A stored reference
is used only while its fingerprint matches; otherwise the case computes its reference live
and `test_stored_references_are_current` fails, naming the models to refresh with

    python tests/model_references.py

The validation report (`simkit validate`) always computes its references live.
"""

from __future__ import annotations

import hashlib
import inspect
import pathlib

import numpy as np

from simkit import models
from simkit.reference.scipy_ivp import ReferenceSolution
from simkit.validation import MODEL_CASES
from simkit.validation.cases import reference_settings, reference_solution

PATH = pathlib.Path(__file__).parent / "data" / "model_references.npz"


def fingerprint(name: str, n_save: int = 41) -> str:
    """A hash of everything model ``name``'s reference depends on."""
    model = models.get(name)
    try:
        source = inspect.getsource(model.rhs)
    except (OSError, TypeError):
        source = repr(model.rhs)
    params = sorted((k, repr(np.asarray(v).tolist())) for k, v in model.params.items())
    parts = (name, source, params, repr(np.asarray(model.y0, float).tolist()),
             repr(sorted(reference_settings(name, n_save).items())))
    return hashlib.sha1(repr(parts).encode()).hexdigest()


def _load() -> dict:
    if not PATH.exists():
        return {}
    with np.load(PATH) as data:
        return {k: data[k] for k in data.files}


_STORED = _load()


def stale() -> list[str]:
    """The model cases whose stored reference is missing or no longer matches."""
    return [n for n in sorted(MODEL_CASES) if str(_STORED.get(f"{n}/fingerprint", "")) != fingerprint(n)]


def stored_reference(name: str) -> ReferenceSolution | None:
    """Model ``name``'s stored reference, or None when it is missing or stale."""
    if name in stale():
        return None
    settings = reference_settings(name)
    return ReferenceSolution(ts=_STORED[f"{name}/ts"], ys=_STORED[f"{name}/ys"],
                             state_names=models.get(name).state_names, method=settings["method"],
                             nfev=int(_STORED[f"{name}/nfev"]), njev=int(_STORED[f"{name}/njev"]), status=0,
                             message="stored: tests/data/model_references.npz")


def write() -> None:
    """Compute every model case's reference with SciPy and store it."""
    out = {}
    for name in sorted(MODEL_CASES):
        ref = reference_solution(name)
        out.update({f"{name}/ts": ref.ts, f"{name}/ys": ref.ys, f"{name}/nfev": ref.nfev, f"{name}/njev": ref.njev,
                    f"{name}/fingerprint": np.asarray(fingerprint(name))})
        print(f"{name}: {ref.method}, {ref.nfev} evaluations")
    PATH.parent.mkdir(exist_ok=True)
    np.savez_compressed(PATH, **out)
    print(f"wrote {PATH}")


if __name__ == "__main__":
    write()
