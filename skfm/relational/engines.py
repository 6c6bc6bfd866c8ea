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
import threading
import uuid

import pandas as pd
from sqlglot import exp

from skfm.relational.database import Database, temporary_folder
from skfm.relational.storage import quote_identifier, sql_string

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


class DuckDBRunner:
    """Run the encoder's queries on the DuckDB connection of a :class:`Database`."""

    dialect = "duckdb"

    def __init__(self, database: Database, progress: bool = False):
        self.database = database
        self.con = database.duckdb_connection()
        self.lock = database.engine_state("duckdb-lock", threading.Lock)
        self.progress = progress

    def ref(self, table: str) -> exp.Table:
        return exp.table_(table, quoted=True)

    def columns(self, table: str) -> dict[str, tuple[str, str]]:
        import duckdb

        try:
            with self.lock:
                rows = self._run(f"DESCRIBE {quote_identifier(table)}").fetchall()
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
        self.views: dict[str, str] = database.engine_state(("spark", id(spark)), dict)

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
            con.execute(f"COPY entities TO {sql_string(source)} (FORMAT parquet)")
            view = f"skfm_entities_{tag}"
            self.spark.read.parquet(source).createOrReplaceTempView(view)
            try:
                sql = build_query(exp.table_(view, quoted=True)).sql(dialect=self.dialect)
                self.spark.sql(sql).write.parquet(result)
            finally:
                self.spark.catalog.dropTempView(view)
            pattern = os.path.join(result, "*.parquet")
            return con.execute(f"SELECT * FROM read_parquet({sql_string(pattern)})").df()
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
    described = con.execute(f"DESCRIBE {quote_identifier(table)}").fetchall()
    columns = []
    for name, sql_type, *_ in described:
        upper = sql_type.upper()
        if upper.startswith("TIMESTAMP") and "TIME ZONE" not in upper:
            columns.append(f"CAST({quote_identifier(name)} AS TIMESTAMP) AS {quote_identifier(name)}")
        elif upper.startswith("ENUM"):
            columns.append(f"CAST({quote_identifier(name)} AS VARCHAR) AS {quote_identifier(name)}")
        else:
            columns.append(quote_identifier(name))
    con.execute(f"COPY (SELECT {', '.join(columns)} FROM {quote_identifier(table)}) "
                f"TO {sql_string(path)} (FORMAT parquet)")


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
