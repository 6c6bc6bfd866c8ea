"""Checks a :class:`~skfm.relational.Database` against the data an engine sees, and
profiles the columns that features are made of.

Both run through an engine runner (:mod:`skfm.relational.engines`) with the
queries of :mod:`skfm.relational.sql`, so they work the same on DuckDB and Spark.
"""

from __future__ import annotations

import warnings

from skfm.relational.database import RESERVED_PREFIX, Database, _check_columns
from skfm.relational.kinds import CATEGORY, NUMBER, TIME
from skfm.relational.plan import Column
from skfm.relational.sql import (
    dangling,
    duplicate_example,
    infinite_counts,
    key_profile,
    table_profile,
    vocabulary,
)

ID_LIKE_MIN_DISTINCT = 20
"""A text column with more distinct values than this, and than half its non-missing values,
is taken for an identifier (names, codes, URLs) and left out."""


def validate_database(database: Database, runner, engine: str) -> None:
    """Raise ``ValueError`` if the database breaks a schema rule; warn on dangling keys.

    Rules: tables and declared columns exist, each column name once; numeric
    columns hold no infinite values; foreign keys point at tables with a primary
    key of the same kind (number or text); primary keys are unique and never
    missing; time columns hold dates or timestamps. The result is cached on
    `database` per engine until a table is added.
    """
    if database.is_validated(engine):
        return
    database.check_references()
    kinds = {}
    for spec in database.tables.values():
        columns = runner.columns(spec.name)
        _check_columns(spec, list(columns))
        kinds[spec.name] = {name: kind for name, (kind, _) in columns.items()}
        if spec.time_column is not None and kinds[spec.name][spec.time_column] != TIME:
            sql_type = columns[spec.time_column][1]
            raise ValueError(
                f"time column {spec.name}.{spec.time_column} has type {sql_type}, not a date or "
                "timestamp; convert it first (e.g. pandas.to_datetime)"
            )
        if spec.primary_key is not None:
            if kinds[spec.name][spec.primary_key] not in ("number", "string"):
                raise ValueError(
                    f"primary key {spec.name}.{spec.primary_key} has type "
                    f"{columns[spec.primary_key][1]}; keys must be numbers or text"
                )
            _check_key(runner, spec.name, spec.primary_key)
        _check_finite(runner, spec.name, [n for n, kind in kinds[spec.name].items()
                                          if kind == "number"])
    for spec in database.tables.values():
        for column, parent in spec.foreign_keys:
            parent_key = database.table(parent).primary_key
            fk_kind, pk_kind = kinds[spec.name][column], kinds[parent][parent_key]
            if fk_kind != pk_kind:
                raise ValueError(
                    f"foreign key {spec.name}.{column} holds {fk_kind} values but the key it "
                    f"points at, {parent}.{parent_key}, holds {pk_kind} values"
                )
            query = dangling(runner.ref(spec.name), column, runner.ref(parent), parent_key)
            n = int(runner.fetch(query)["n"].iloc[0])
            if n:
                warnings.warn(
                    f"{n} rows of {spec.name} have a {column} that names no row of {parent}; "
                    "they still count on their own paths and give missing values on the hop "
                    f"to {parent}",
                    UserWarning,
                    stacklevel=4,
                )
    database.mark_validated(engine)


def _check_key(runner, table: str, key: str) -> None:
    counts = runner.fetch(key_profile(runner.ref(table), key)).iloc[0]
    if int(counts["missing"]):
        raise ValueError(f"primary key {table}.{key} has {int(counts['missing'])} missing values")
    if int(counts["duplicates"]):
        example = runner.fetch(duplicate_example(runner.ref(table), key))["value"].iloc[0]
        raise ValueError(
            f"primary key {table}.{key} is not unique: {int(counts['duplicates'])} duplicate "
            f"values, e.g. {_python(example)!r}"
        )


def _check_finite(runner, table: str, numeric: list[str]) -> None:
    if not numeric:
        return
    counts = runner.fetch(infinite_counts(runner.ref(table), numeric)).iloc[0]
    for j, name in enumerate(numeric):
        if int(counts[f"i{j}"]):
            raise ValueError(
                f"column {table}.{name} holds {int(counts[f'i{j}'])} infinite values; replace "
                "them by finite values or by missing values (NULL / NaN)"
            )


def _python(value):
    return value.item() if hasattr(value, "item") else value


def profile_columns(database: Database, runner, table: str, *, before: float | None,
                    n_top_categories: int) -> list[Column]:
    """The columns of `table` that features are made of, with category vocabularies.

    Keys, ignored columns, columns of unsupported types, columns with no value
    (before `before`) and identifier-like text (more than
    :data:`ID_LIKE_MIN_DISTINCT` distinct values, and more than half as many as
    non-missing values) are left out. Statistics use only rows strictly before `before` (Unix
    seconds) in a table with a time column, so rows after the latest cutoff
    cannot shape the features.
    """
    spec = database.table(table)
    skip = spec.key_columns() | set(spec.ignore)
    candidates = []
    for name, (kind, _) in runner.columns(table).items():
        if name in skip or name.startswith(RESERVED_PREFIX) or kind == "other":
            continue
        if name in spec.categorical or kind == "string":
            candidates.append((name, CATEGORY))
        elif kind == "number":
            candidates.append((name, NUMBER))
        else:
            candidates.append((name, TIME))
    if not candidates:
        return []
    counted = [(name, kind == CATEGORY) for name, kind in candidates]
    profile = runner.fetch(
        table_profile(runner.ref(table), counted, spec.time_column, before)
    ).iloc[0]
    columns = []
    for i, (name, kind) in enumerate(candidates):
        present = int(profile[f"c{i}"])
        if present == 0:
            continue
        if kind != CATEGORY:
            columns.append(Column(name, kind))
            continue
        distinct = int(profile[f"d{i}"])
        if distinct > ID_LIKE_MIN_DISTINCT and distinct > 0.5 * present:
            continue
        values = ()
        if n_top_categories:
            top = runner.fetch(vocabulary(runner.ref(table), name, n_top_categories,
                                          spec.time_column, before))
            values = tuple(_python(v) for v in top["value"])
        columns.append(Column(name, CATEGORY, values))
    return columns
