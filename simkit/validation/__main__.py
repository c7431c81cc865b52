"""``python -m simkit.validation [--quick] [--out DIR] [--resume]``: the same as ``simkit validate``.

Imports flow one way: the ``simkit`` command (`simkit.cli`) uses this package; this package
does not import the command, so this entry point parses its own options.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._config import configure_own_process
from ..errors import SimkitError
from .report import run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simkit.validation",
                                     description="Reproduce the validation report.")
    parser.add_argument("--quick", action="store_true", help="fewer tolerances in work-precision")
    parser.add_argument("--out", help="output folder (default: validation/report; with --quick, "
                        "a new folder simkit-validation-quick-<date>-<time> here)")
    parser.add_argument("--resume", action="store_true",
                        help="continue a run that stopped, in the same folder, without its finished parts")
    args = parser.parse_args(argv)
    configure_own_process()  # simkit's fast CPU settings, as `simkit validate` (simkit/_config.py)
    try:
        summary = run(out_dir=args.out, quick=args.quick, resume=args.resume)
    except (SimkitError, OSError) as exc:  # one line, as `simkit validate` reports it
        print(f"simkit.validation: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
