"""Engines that run the encoder's SQL: DuckDB (in-process, default) and Apache Spark.

Both expose the same small interface to the encoder:

- ``ref(table)``: the ``sqlglot`` table node the engine knows a table by;
- ``columns(table)``: ``{column: (kind, sql_type)}`` with kind one of
  ``"number"``, ``"string"``, ``"time"``, ``"other"``;
- ``fetch(query)``: run a small query, get a DataFrame;
- ``features(query_builder, entities)``: register the entities table, run the
  feature query, return its result as a DataFrame.

A DuckDB runner made with ``progress=True`` lets DuckDB draw its progress bar
(for queries that run longer than two seconds); otherwise the bar is off. The
setting is made before each query on the database's own connection (a cursor of
the user's one has its own settings).

DuckDB holds DataFrame and CSV tables as in-memory tables of its own and reads
Parquet files in place. Spark reads Parquet files directly; DataFrame, CSV and
DuckDB-connection tables reach it as Parquet files written by DuckDB into a
temporary folder, and results come back the same way (no pandas-to-Spark row
conversion, no pyarrow needed).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import uuid

import pandas as pd
from sqlglot import exp

from skfm.relational.database import _DETACHED, Database, temporary_folder

_DUCKDB_NUMBER = re.compile(
    r"^(BOOLEAN|TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|"
    r"UHUGEINT|FLOAT|REAL|DOUBLE|DECIMAL.*)$"
)
_SPARK_NUMBER = re.compile(r"^(boolean|tinyint|smallint|int|bigint|float|double|decimal.*)$")


def _kind_duckdb(sql_type: str) -> str:
    sql_type = sql_type.upper()
    if _DUCKDB_NUMBER.match(sql_type):
        return "number"
    if sql_type == "VARCHAR" or sql_type.startswith("ENUM"):
        return "string"
    if sql_type == "DATE" or sql_type.startswith("TIMESTAMP"):
        return "time"
    return "other"


def _kind_spark(sql_type: str) -> str:
    if _SPARK_NUMBER.match(sql_type):
        return "number"
    if sql_type == "string" or sql_type.startswith(("varchar", "char")):
        return "string"
    if sql_type in ("date", "timestamp", "timestamp_ntz"):
        return "time"
    return "other"


def _quote(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect="duckdb")


def _string(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="duckdb")


def open_duckdb(database: Database):
    """Open the DuckDB connection of `database` and load its tables into it.

    DataFrame and CSV tables become temporary DuckDB tables (one copy, fast to
    scan repeatedly); Parquet tables become views over the file; tables given
    with ``data=None`` must exist in the connection.
    """
    import duckdb

    connection = database.connection
    if connection == _DETACHED:
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
        target = _quote(spec.name)
        try:
            if kind == "frame":
                view = f"__skfm_load_{uuid.uuid4().hex}"
                con.register(view, spec.source)
                con.execute(f"CREATE TEMP TABLE {target} AS SELECT * FROM {_quote(view)}")
                con.unregister(view)
            elif kind == "csv":
                con.execute(f"CREATE TEMP TABLE {target} AS SELECT * FROM "
                            f"read_csv({_string(spec.source)})")
            else:
                con.execute(f"CREATE TEMP VIEW {target} AS SELECT * FROM "
                            f"read_parquet({_string(spec.source)})")
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


class DuckDBRunner:
    """Run the encoder's queries on the DuckDB connection of a :class:`Database`."""

    dialect = "duckdb"

    def __init__(self, database: Database, progress: bool = False):
        self.database = database
        self.con = database.duckdb_connection()
        self.lock = database._engine_cache.setdefault("duckdb-lock", threading.Lock())
        self.progress = progress

    def ref(self, table: str) -> exp.Table:
        return exp.table_(table, quoted=True)

    def columns(self, table: str) -> dict[str, tuple[str, str]]:
        import duckdb

        try:
            with self.lock:
                rows = self._run(f"DESCRIBE {_quote(table)}").fetchall()
        except duckdb.Error as err:
            raise ValueError(f"table {table!r} is not in the DuckDB connection: {err}") from None
        return {name: (_kind_duckdb(sql_type), sql_type) for name, sql_type, *_ in rows}

    def fetch(self, query: exp.Expression) -> pd.DataFrame:
        with self.lock:
            return self._run(query.sql(dialect=self.dialect)).df()

    def features(self, build_query, entities: pd.DataFrame) -> pd.DataFrame:
        name = f"__skfm_entities_{uuid.uuid4().hex}"
        with self.lock:
            self.con.register(name, entities)
            try:
                sql = build_query(exp.table_(name, quoted=True)).sql(dialect=self.dialect)
                return self._run(sql).df()
            finally:
                self.con.unregister(name)

    def _run(self, sql: str):
        """Execute ``sql`` (the lock held) with DuckDB's progress bar on or off, as asked."""
        self.con.execute(f"SET enable_progress_bar = {bool(self.progress)}")
        return self.con.execute(sql)


class SparkRunner:
    """Run the encoder's queries on a SparkSession.

    Parameters
    ----------
    database : Database
    spark : pyspark.sql.SparkSession

    Notes
    -----
    Spark converts timestamps to Unix seconds in its session time zone; set
    ``spark.sql.session.timeZone`` to ``"UTC"`` for features equal to DuckDB's
    on naive timestamps (Parquet files written by DuckDB are read as
    ``timestamp_ntz``, which is zone-free either way).
    """

    dialect = "spark"

    def __init__(self, database: Database, spark):
        self.database = database
        self.spark = spark
        self.views: dict[str, str] = database._engine_cache.setdefault(("spark", id(spark)), {})

    def _folder(self) -> str:
        return temporary_folder(self.database, "spark")

    def ref(self, table: str) -> exp.Table:
        spec = self.database.table(table)
        if spec.source_kind == "external" and self.database.connection is None:
            return exp.to_table(table)  # a table of the Spark catalog
        if table not in self.views:
            if spec.source_kind == "parquet":
                path = spec.source
            else:
                path = os.path.join(self._folder(), f"{uuid.uuid4().hex}.parquet")
                export_parquet(self.database.duckdb_connection(), table, path)
            view = f"skfm_{uuid.uuid4().hex[:12]}_{re.sub(r'[^0-9A-Za-z_]', '_', table)}"
            self.spark.read.parquet(path).createOrReplaceTempView(view)
            self.views[table] = view
        return exp.table_(self.views[table], quoted=True)

    def columns(self, table: str) -> dict[str, tuple[str, str]]:
        ref = self.ref(table).sql(dialect=self.dialect)
        try:
            dtypes = self.spark.table(ref).dtypes
        except Exception as err:  # pyspark raises AnalysisException subclasses
            raise ValueError(f"table {table!r} is not in the Spark catalog: {err}") from None
        return {name: (_kind_spark(sql_type), sql_type) for name, sql_type in dtypes}

    def fetch(self, query: exp.Expression) -> pd.DataFrame:
        frame = self.spark.sql(query.sql(dialect=self.dialect))
        rows = frame.collect()
        return pd.DataFrame([tuple(r) for r in rows], columns=frame.columns)

    def features(self, build_query, entities: pd.DataFrame) -> pd.DataFrame:
        import duckdb

        tag = uuid.uuid4().hex
        folder = self._folder()
        source = os.path.join(folder, f"entities-{tag}.parquet")
        result = os.path.join(folder, f"features-{tag}")
        con = duckdb.connect()
        try:
            con.register("entities", entities)
            con.execute(f"COPY entities TO {_string(source)} (FORMAT parquet)")
            view = f"skfm_entities_{tag}"
            self.spark.read.parquet(source).createOrReplaceTempView(view)
            try:
                sql = build_query(exp.table_(view, quoted=True)).sql(dialect=self.dialect)
                self.spark.sql(sql).write.parquet(result)
            finally:
                self.spark.catalog.dropTempView(view)
            pattern = os.path.join(result, "*.parquet")
            return con.execute(f"SELECT * FROM read_parquet({_string(pattern)})").df()
        finally:
            con.close()
            _remove(source, result)


def _remove(*paths: str) -> None:
    import shutil

    for path in paths:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.remove(path)


def export_parquet(con, table: str, path: str) -> None:
    """Write a DuckDB table to Parquet readable by Spark (microsecond timestamps, text enums)."""
    described = con.execute(f"DESCRIBE {_quote(table)}").fetchall()
    columns = []
    for name, sql_type, *_ in described:
        upper = sql_type.upper()
        if upper.startswith("TIMESTAMP") and "TIME ZONE" not in upper:
            columns.append(f"CAST({_quote(name)} AS TIMESTAMP) AS {_quote(name)}")
        elif upper.startswith("ENUM"):
            columns.append(f"CAST({_quote(name)} AS VARCHAR) AS {_quote(name)}")
        else:
            columns.append(_quote(name))
    con.execute(f"COPY (SELECT {', '.join(columns)} FROM {_quote(table)}) "
                f"TO {_string(path)} (FORMAT parquet)")


def frame_to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    """A DataFrame as the bytes of a Parquet file (written by DuckDB)."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="skfm-") as folder:
        path = os.path.join(folder, "table.parquet")
        con = duckdb.connect()
        try:
            con.register("frame", frame)
            con.execute(f"COPY frame TO {_string(path)} (FORMAT parquet)")
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
            return con.execute(f"SELECT * FROM read_parquet({_string(path)})").df()
        finally:
            con.close()


def get_runner(database: Database, engine: str, progress: bool = False):
    """The runner for `engine` (``"duckdb"`` or ``"spark"``, the active SparkSession).

    ``progress`` switches DuckDB's progress bar on; Spark's console progress
    follows Spark's own ``spark.ui.showConsoleProgress``.
    """
    if engine == "duckdb":
        return DuckDBRunner(database, progress)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ImportError(
            "engine='spark' needs pyspark: pip install 'skfm[spark]' (and Java 17+)"
        ) from None
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise ValueError(
            "engine='spark' uses the active SparkSession and there is none; create one first, "
            "e.g. SparkSession.builder.master('local[*]').getOrCreate()"
        )
    return SparkRunner(database, spark)
