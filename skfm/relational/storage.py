"""DuckDB storage of a :class:`~skfm.relational.Database`'s tables, below the description and
the engines: the connection that holds the tables, and DataFrames as Parquet bytes (how a
Database pickles them).

It reads a Database only through its attributes (``connection``, ``tables``), so that
:mod:`skfm.relational.database` can import it and :mod:`skfm.relational.engines` build on
both. DuckDB itself is imported on first use.
"""

from __future__ import annotations

import os
import tempfile
import uuid

import pandas as pd
from sqlglot import exp

DETACHED = "__skfm_detached_in_memory__"
"""Stands for an in-memory DuckDB connection that was pickled (its tables are lost)."""


def quote_identifier(name: str) -> str:
    """``name`` as a quoted DuckDB identifier."""
    return exp.to_identifier(name, quoted=True).sql(dialect="duckdb")


def sql_string(value: str) -> str:
    """``value`` as a DuckDB string literal."""
    return exp.Literal.string(value).sql(dialect="duckdb")


def open_duckdb(database):
    """Open the DuckDB connection of `database` and load its tables into it.

    DataFrame and CSV tables become temporary DuckDB tables (one copy, fast to
    scan repeatedly); Parquet tables become views over the file; tables given
    with ``data=None`` must exist in the connection.
    """
    import duckdb

    connection = database.connection
    if connection == DETACHED:
        raise ValueError(
            "this Database was pickled with an in-memory DuckDB connection, whose tables could "
            "not be saved; build the Database from DataFrames or a DuckDB file, or rebind the "
            "encoder with set_params(database=...)"
        )
    if connection is None:
        con = duckdb.connect()
    elif isinstance(connection, str):
        con = duckdb.connect(connection)
    else:
        con = connection.cursor()  # own client context: our temp tables stay out of the user's
    for spec in database.tables.values():
        kind = spec.source_kind
        if kind == "external":
            continue
        if connection is not None and _duckdb_has(con, spec.name):
            raise ValueError(
                f"table {spec.name!r} is given data but the DuckDB connection already has a "
                "table of that name; rename one of them"
            )
        target = quote_identifier(spec.name)
        try:
            if kind == "frame":
                view = f"__skfm_load_{uuid.uuid4().hex}"
                con.register(view, spec.source)
                con.execute(f"CREATE TEMP TABLE {target} AS SELECT * FROM {quote_identifier(view)}")
                con.unregister(view)
            elif kind == "csv":
                con.execute(f"CREATE TEMP TABLE {target} AS SELECT * FROM "
                            f"read_csv({sql_string(spec.source)})")
            else:
                con.execute(f"CREATE TEMP VIEW {target} AS SELECT * FROM "
                            f"read_parquet({sql_string(spec.source)})")
        except duckdb.Error as err:
            raise ValueError(f"could not load table {spec.name!r} into DuckDB: {err}") from err
    return con


def _duckdb_has(con, name: str) -> bool:
    row = con.execute(
        "SELECT COUNT(*) FROM duckdb_tables() WHERE table_name = ?", [name]
    ).fetchall()[0]
    views = con.execute(
        "SELECT COUNT(*) FROM duckdb_views() WHERE view_name = ? AND NOT internal", [name]
    ).fetchall()[0]
    return row[0] + views[0] > 0


def frame_to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    """A DataFrame as the bytes of a Parquet file (written by DuckDB)."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="skfm-") as folder:
        path = os.path.join(folder, "table.parquet")
        con = duckdb.connect()
        try:
            con.register("frame", frame)
            con.execute(f"COPY frame TO {sql_string(path)} (FORMAT parquet)")
        finally:
            con.close()
        with open(path, "rb") as fh:
            return fh.read()


def frame_from_parquet_bytes(data: bytes) -> pd.DataFrame:
    """Inverse of :func:`frame_to_parquet_bytes`."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="skfm-") as folder:
        path = os.path.join(folder, "table.parquet")
        with open(path, "wb") as fh:
            fh.write(data)
        con = duckdb.connect()
        try:
            return con.execute(f"SELECT * FROM read_parquet({sql_string(path)})").df()
        finally:
            con.close()
