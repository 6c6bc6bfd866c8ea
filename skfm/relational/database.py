"""A small description of a relational database: tables, keys and time columns.

A :class:`Database` names each table's data (a pandas DataFrame, a CSV or Parquet
path, or a table that already lives in a DuckDB connection or a Spark catalog),
its primary key, its foreign keys and its time column. It holds no query logic;
the engines in :mod:`skfm.relational.engines` read it (its DuckDB tables are loaded by
:mod:`skfm.relational.storage`).
"""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass, field

import pandas as pd

from skfm.relational.storage import (
    DETACHED,
    frame_from_parquet_bytes,
    frame_to_parquet_bytes,
    open_duckdb,
)

RESERVED_PREFIX = "__skfm"
"""Table and column names starting with this prefix are used internally."""


@dataclass(frozen=True, eq=False)
class TableSpec:
    """One table of a :class:`Database`.

    Attributes
    ----------
    name : str
        Table name, as used in feature names and SQL.
    source : DataFrame, str or None
        The data: a DataFrame, a path to a ``.csv``/``.csv.gz``/``.tsv`` or
        ``.parquet``/``.pq`` file, or None for a table that already exists
        under ``name`` in the database's DuckDB connection (or, with the Spark
        engine, in the active Spark catalog).
    primary_key : str or None
        Column whose values identify a row; required for a table that other
        tables point to.
    foreign_keys : tuple of (str, str)
        ``(column, parent_table)`` pairs; ``column`` holds values of the
        parent's primary key.
    time_column : str or None
        Column with the time at which a row became known. Rows at or after an
        entity's cutoff time are invisible to that entity's features.
    categorical : tuple of str
        Columns to aggregate as categories even though they hold numbers.
    ignore : tuple of str
        Columns never used for features (identifiers, free text, leaks).
    """

    name: str
    source: object = field(repr=False)
    primary_key: str | None = None
    foreign_keys: tuple[tuple[str, str], ...] = ()
    time_column: str | None = None
    categorical: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    @property
    def source_kind(self) -> str:
        """``"frame"``, ``"csv"``, ``"parquet"`` or ``"external"`` (source is None)."""
        if isinstance(self.source, pd.DataFrame):
            return "frame"
        if self.source is None:
            return "external"
        return _file_kind(str(self.source))

    def key_columns(self) -> set[str]:
        """Primary and foreign key columns: identifiers, never aggregated as values."""
        keys = {column for column, _ in self.foreign_keys}
        if self.primary_key is not None:
            keys.add(self.primary_key)
        return keys


def _names(value, what: str, table: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} of table {table!r} must be column names (str), got {name!r}")
    return names


class Database:
    """Tables, primary keys, foreign keys and time columns of a relational database.

    Build it in a few lines with :meth:`add_table`; give it to
    :class:`~skfm.relational.RDBEncoder`. The description is a read-only
    handle: copies (``copy.deepcopy``, ``sklearn.base.clone``) share it, so
    cross-validation does not duplicate the data. Pickling (and ``skops.io``)
    stores DataFrame tables as Parquet bytes and paths as paths; a DuckDB
    connection is reopened lazily after unpickling when it is file-backed (an
    in-memory connection cannot be pickled: its tables must be re-attached,
    see Notes).

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection, str or None, default=None
        Where tables added with ``data=None`` live: an open DuckDB connection
        or the path of a DuckDB database file. None: DuckDB runs in memory and
        every table must bring its data.

    Attributes
    ----------
    tables : dict of str to TableSpec
        The tables, in the order they were added.

    Notes
    -----
    Schema rules, checked by ``skfm.relational.schema.validate_database``
    (which the encoder calls once per engine): every referenced table and
    column exists; a foreign key points at a table that has a primary key;
    primary keys are unique and not missing; time columns hold dates or
    timestamps. Foreign-key values with no matching parent row are allowed
    (real databases have them) and reported in a warning: such a child row
    still counts for its own paths and contributes missing values on the hop to
    the absent parent. Cycles among foreign keys (including a table pointing at
    itself) are allowed: feature paths stop after ``max_depth`` hops.

    Naive timestamps are read as UTC. A Database unpickled from an in-memory
    connection raises a ``ValueError`` on use; pass DataFrames or a database
    file instead when the encoder must be persisted.

    Examples
    --------
    >>> import pandas as pd
    >>> from skfm.relational import Database
    >>> users = pd.DataFrame({"user_id": [1, 2], "country": ["FR", "DE"]})
    >>> orders = pd.DataFrame({
    ...     "order_id": [10, 11, 12],
    ...     "user_id": [1, 1, 2],
    ...     "amount": [5.0, 7.5, 3.0],
    ...     "time": pd.to_datetime(["2024-01-02", "2024-02-01", "2024-01-15"]),
    ... })
    >>> db = (
    ...     Database()
    ...     .add_table("users", users, primary_key="user_id")
    ...     .add_table("orders", orders, primary_key="order_id",
    ...                foreign_keys={"user_id": "users"}, time_column="time")
    ... )
    >>> db
    Database(users[2 rows], orders[3 rows] -> users)
    """

    def __init__(self, connection=None):
        if connection is not None and not isinstance(connection, (str, os.PathLike)):
            if not hasattr(connection, "execute"):
                raise TypeError(
                    "connection must be a DuckDB connection, a database file path or None, got "
                    f"{type(connection).__name__}"
                )
            self._connection_path = _duckdb_path(connection)
        elif connection is not None:
            connection = os.fspath(connection)
        self.connection = connection
        self.tables: dict[str, TableSpec] = {}
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._con = None  # lazily opened duckdb connection
        self._validated: set[str] = set()  # engines this description passed validation on
        self._engine_cache: dict = {}  # per-engine state (DuckDB lock, Spark views, folders)
        self._engine_cache_lock = threading.Lock()

    def add_table(
        self,
        name,
        data=None,
        *,
        primary_key=None,
        foreign_keys=None,
        time_column=None,
        categorical=None,
        ignore=None,
    ) -> Database:
        """Add a table and return the database (so calls chain).

        Parameters
        ----------
        name : str
            Table name.
        data : DataFrame, str, os.PathLike or None, default=None
            A DataFrame, a CSV/Parquet path, or None for a table named `name`
            in the connection (or the Spark catalog).
        primary_key : str, optional
            Column that identifies a row.
        foreign_keys : dict of str to str, optional
            ``{column: parent_table}``; the column holds the parent's primary
            key values.
        time_column : str, optional
            When each row became known (date or timestamp column).
        categorical : list of str, optional
            Numeric columns to treat as categories (codes such as a status id).
        ignore : list of str, optional
            Columns to leave out of the features.

        Returns
        -------
        self : Database
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"table name must be a non-empty str, got {name!r}")
        if name.startswith(RESERVED_PREFIX):
            raise ValueError(
                f"table names starting with {RESERVED_PREFIX!r} are reserved: {name!r}"
            )
        if name in self.tables:
            raise ValueError(f"table {name!r} is already in the database")
        if data is not None and not isinstance(data, (pd.DataFrame, str, os.PathLike)):
            raise TypeError(
                f"data of table {name!r} must be a pandas DataFrame, a CSV/Parquet path or None, "
                f"got {type(data).__name__}"
            )
        if isinstance(data, os.PathLike):
            data = os.fspath(data)
        if isinstance(data, str) and _file_kind(data) is None:
            raise ValueError(
                f"data of table {name!r} is a path {data!r}; give a .csv, .tsv (optionally "
                ".gz) or .parquet file"
            )
        foreign_keys = {} if foreign_keys is None else foreign_keys
        if not isinstance(foreign_keys, dict):
            raise TypeError(
                f"foreign_keys of table {name!r} must be a dict {{column: parent_table}}, "
                f"got {type(foreign_keys).__name__}"
            )
        for value, what in [(primary_key, "primary_key"), (time_column, "time_column")]:
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{what} of table {name!r} must be a column name, got {value!r}")
        fks = tuple((str(column), str(parent)) for column, parent in foreign_keys.items())
        spec = TableSpec(
            name=name,
            source=data,
            primary_key=primary_key,
            foreign_keys=fks,
            time_column=time_column,
            categorical=_names(categorical, "categorical", name),
            ignore=_names(ignore, "ignore", name),
        )
        if spec.source_kind == "frame":
            _check_columns(spec, [str(c) for c in data.columns])
        self.tables[name] = spec
        self._validated = set()
        return self

    # ------------------------------------------------------------------ schema
    def table(self, name) -> TableSpec:
        """The :class:`TableSpec` called `name`; ``ValueError`` if there is none."""
        try:
            return self.tables[name]
        except (KeyError, TypeError):
            raise ValueError(
                f"unknown table {name!r}; the database has {sorted(self.tables)}"
            ) from None

    def children(self, name) -> list[tuple[str, str]]:
        """``(child_table, fk_column)`` for every foreign key pointing at `name`, sorted."""
        return sorted(
            (child.name, column)
            for child in self.tables.values()
            for column, parent in child.foreign_keys
            if parent == name
        )

    def check_references(self) -> None:
        """Raise ``ValueError`` if a foreign key names an unknown table or one without key."""
        if not self.tables:
            raise ValueError("the database has no tables; add some with add_table()")
        for spec in self.tables.values():
            for column, parent in spec.foreign_keys:
                if parent not in self.tables:
                    raise ValueError(
                        f"foreign key {spec.name}.{column} points at unknown table {parent!r}; "
                        f"the database has {sorted(self.tables)}"
                    )
                if self.tables[parent].primary_key is None:
                    raise ValueError(
                        f"foreign key {spec.name}.{column} points at table {parent!r}, which has "
                        "no primary key; give it one with add_table(..., primary_key=...)"
                    )

    def is_validated(self, engine: str) -> bool:
        """Whether the tables passed ``skfm.relational.schema.validate_database`` on
        `engine` since the last :meth:`add_table`."""
        return engine in self._validated

    def mark_validated(self, engine: str) -> None:
        """Record that the tables passed validation on `engine` (until a table is added)."""
        self._validated.add(engine)

    # -------------------------------------------------------------- engine side
    def duckdb_connection(self):
        """The DuckDB connection holding every table, opened (and filled) on first use."""
        if self._con is None:
            self._con = open_duckdb(self)
        return self._con

    def engine_state(self, key, factory):
        """What an engine keeps with this description under `key`, made by ``factory()`` on
        first use: the lock on the DuckDB connection, Spark's views of the tables, folders for
        exchange files. Every encoder reading this description shares it (clones share the
        description); unpickling starts afresh."""
        with self._engine_cache_lock:
            if key not in self._engine_cache:
                self._engine_cache[key] = factory()
            return self._engine_cache[key]

    # ------------------------------------------------------------- copy/pickle
    def __deepcopy__(self, memo):
        return self  # a read-only handle: clones share it

    def __getstate__(self):
        connection = self.connection
        if connection is not None and not isinstance(connection, str):
            connection = self._connection_path or DETACHED
        tables = []
        for spec in self.tables.values():
            source = spec.source
            if spec.source_kind == "frame":
                source = ("parquet-bytes", frame_to_parquet_bytes(source))
            tables.append(
                {
                    "name": spec.name,
                    "source": source,
                    "primary_key": spec.primary_key,
                    "foreign_keys": [list(fk) for fk in spec.foreign_keys],
                    "time_column": spec.time_column,
                    "categorical": list(spec.categorical),
                    "ignore": list(spec.ignore),
                }
            )
        return {"connection": connection, "tables": tables}

    def __setstate__(self, state):
        self.connection = state["connection"]
        self.tables = {}
        self._reset_cache()
        for t in state["tables"]:
            source = t["source"]
            if isinstance(source, tuple) and source[0] == "parquet-bytes":
                source = frame_from_parquet_bytes(source[1])
            self.tables[t["name"]] = TableSpec(
                name=t["name"],
                source=source,
                primary_key=t["primary_key"],
                foreign_keys=tuple(tuple(fk) for fk in t["foreign_keys"]),
                time_column=t["time_column"],
                categorical=tuple(t["categorical"]),
                ignore=tuple(t["ignore"]),
            )

    def __repr__(self) -> str:
        parts = []
        for spec in self.tables.values():
            size = f"[{len(spec.source)} rows]" if spec.source_kind == "frame" else ""
            parents = sorted({parent for _, parent in spec.foreign_keys})
            arrow = f" -> {', '.join(parents)}" if parents else ""
            parts.append(f"{spec.name}{size}{arrow}")
        return f"Database({', '.join(parts)})"


def _file_kind(path: str) -> str | None:
    """``"csv"`` or ``"parquet"`` from a file name, None for anything else."""
    name = path.lower().removesuffix(".gz")
    if name.endswith((".parquet", ".pq")) and not path.lower().endswith(".gz"):
        return "parquet"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    return None


def _duckdb_path(connection) -> str | None:
    """File behind a DuckDB connection, or None for an in-memory one."""
    row = connection.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return row[0][0] if row and row[0][0] else None


def _check_columns(spec: TableSpec, columns: list[str]) -> None:
    """Raise ``ValueError`` naming a declared column that the table does not have, or a
    column name that occurs twice."""
    present = set(columns)
    if len(present) < len(columns):
        twice = sorted({column for column in columns if columns.count(column) > 1})
        raise ValueError(
            f"table {spec.name!r} has duplicate column names {twice}; rename them so that "
            "each column has its own name"
        )
    declared = [("primary_key", spec.primary_key), ("time_column", spec.time_column)]
    declared += [("foreign key", column) for column, _ in spec.foreign_keys]
    declared += [("categorical", column) for column in spec.categorical]
    declared += [("ignore", column) for column in spec.ignore]
    for what, column in declared:
        if column is not None and column not in present:
            raise ValueError(
                f"{what} column {column!r} is not in table {spec.name!r}; its columns are "
                f"{columns}"
            )
    for column in columns:
        if column.startswith(RESERVED_PREFIX):
            raise ValueError(
                f"column {spec.name}.{column}: names starting with {RESERVED_PREFIX!r} are "
                "reserved"
            )


def temporary_folder(database: Database, engine: str) -> str:
    """A folder for engine exchange files, removed when the database is garbage-collected."""
    import shutil
    import weakref

    def make() -> str:
        folder = tempfile.mkdtemp(prefix=f"skfm-{engine}-")
        weakref.finalize(database, shutil.rmtree, folder, True)
        return folder

    return database.engine_state(("folder", engine), make)
