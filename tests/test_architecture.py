"""The package's architecture rules, checked on the source (see docs/architecture.rst)."""

import subprocess
import sys

#: Optional heavy dependencies that ``import skfm`` must not import: sktime (the forecaster,
#: the Mantis sktime adapter), sqlglot and DuckDB (the relational classes), matplotlib
#: (plots), and the pretraining code.
LAZY = ("sktime", "sqlglot", "duckdb", "matplotlib", "skfm.pretrain", "skfm.relational")


def test_import_skfm_stays_light():
    """``import skfm`` imports none of :data:`LAZY`; the classes that need them still import
    on first access."""
    code = (
        "import sys, skfm\n"
        f"print(sorted(m for m in {LAZY!r} if m in sys.modules))\n"
        "skfm.Database, skfm.RDBEncoder\n"
        "print(sorted(m for m in ('sqlglot', 'matplotlib', 'sktime') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "['sqlglot']"
