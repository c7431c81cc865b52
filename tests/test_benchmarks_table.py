"""The benchmark page's summary table is the output of benchmarks/table.py over the committed
results (no number typed by hand), and every results file it reads exists."""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_table_module():
    spec = importlib.util.spec_from_file_location("benchmarks_table", ROOT / "benchmarks" / "table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_readme_table_is_generated_from_the_committed_results():
    table = load_table_module()
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    assert table.block() in readme, "run: python benchmarks/table.py --write"
    # the table is the first thing on the page after its two-line introduction
    assert readme.index(table.BEGIN) < 1000
    for workload in table.WORKLOADS:
        assert (ROOT / "benchmarks" / "results" / workload.file).exists()
