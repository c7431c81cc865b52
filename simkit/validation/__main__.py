"""``python -m simkit.validation [--quick] [--out DIR]``."""

from ..cli import main

raise SystemExit(main(["validate", *__import__("sys").argv[1:]]))
