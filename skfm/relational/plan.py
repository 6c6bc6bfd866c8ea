"""Which features an :class:`~skfm.relational.RDBEncoder` computes: paths and aggregations.

A *path* is a walk of 1..``max_depth`` foreign-key hops from the entity table.
A hop goes *down* (from a table to the rows of a child table that point at it:
one-to-many) or *up* (from a row to the parent row its foreign key names:
many-to-one). A path with at least one down hop reaches many rows per entity
and gets aggregations (count, mean, std, min, max, frequencies of categories,
time since the last event); a path of up hops only reaches one row, whose
columns are copied. Every aggregation stays within one column (no column is
mixed with another), and nothing is learned from the target.

Feature names spell the path and the aggregation, e.g. ``count(results)``,
``mean(results.races.round)``, ``min(results.date:days_ago)`` (days since the
last result before the cutoff), ``frac(results.statusId=1)``, the 30-day
window ``count(results@30d)``, or for a single row ``drivers.dob:days_ago``
and ``drivers.nationality=British``. A hop is written ``table`` or, where a
table has several foreign keys to the same parent (or one to itself),
``table[fk_column]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from skfm.relational.database import Database
from skfm.relational.kinds import AGGREGATIONS as AGGREGATIONS  # re-exported
from skfm.relational.kinds import CATEGORY, NUMBER, TIME, VALUE_AGGREGATIONS
from skfm.relational.sql import feature_query

MAX_FEATURES = 5000
"""A plan with more features than this is refused (lower ``max_depth``)."""


@dataclass(frozen=True)
class Hop:
    """One foreign-key step of a path.

    Attributes
    ----------
    direction : {"down", "up"}
        ``"down"``: to the rows of `target` whose `column` names the current
        row; ``"up"``: to the `target` row named by the current row's `column`.
    source, target : str
        Table left and table reached.
    column : str
        The foreign-key column (in `target` for a down hop, in `source` for an
        up hop).
    label : str
        How the hop is written in feature names.
    """

    direction: str
    source: str
    target: str
    column: str
    label: str


@dataclass(frozen=True)
class Column:
    """A column that features are made of.

    Attributes
    ----------
    name : str
    kind : {"number", "time", "category"}
    vocabulary : tuple
        For categories: the most frequent values (at most ``n_top_categories``),
        most frequent first; ``frac``/``mode`` features refer to them.
    """

    name: str
    kind: str
    vocabulary: tuple = ()


@dataclass(frozen=True)
class Feature:
    """One output (or helper) column of the plan.

    Attributes
    ----------
    name : str
        Path-and-aggregation name, see the module docstring.
    path : tuple of Hop
        Hops from the entity table; empty for the entity's own columns.
    agg : str
        ``"count"``, one of :data:`VALUE_AGGREGATIONS`, ``"frac"``,
        ``"nunique"``, ``"mode"``, or for single-row paths ``"value"`` and
        ``"is"`` (indicator of a category value).
    column : str or None
    kind : str or None
        Kind of `column` (see :class:`Column`).
    value : object
        Category value for ``"frac"``/``"is"``.
    window : int or None
        Days before the cutoff that a windowed aggregation looks back.
    output : bool
        False for helper columns (frequencies computed only to derive a mode).
    """

    name: str
    path: tuple[Hop, ...]
    agg: str
    column: str | None = None
    kind: str | None = None
    value: object = None
    window: int | None = None
    output: bool = True

    @property
    def many(self) -> bool:
        """Whether the path reaches many rows (has a down hop)."""
        return any(h.direction == "down" for h in self.path)

    @property
    def prefix(self) -> tuple[Hop, ...]:
        """The path up to its last down hop: the rows an aggregation runs over."""
        last = max((i for i, h in enumerate(self.path) if h.direction == "down"), default=-1)
        return self.path[: last + 1]


@dataclass(frozen=True)
class FeaturePlan:
    """Everything ``transform`` needs to build the SQL: fixed at ``fit``.

    Attributes
    ----------
    entity_table : str
    temporal : bool
        Whether entities come with cutoff times.
    keys : dict of str to str
        Primary key of each table on a path.
    times : dict of str to str or None
        Time column of each table on a path.
    features : tuple of Feature
        In output order (helpers included, flagged ``output=False``).

    Examples
    --------
    >>> import pandas as pd
    >>> from skfm.relational import Database, RDBEncoder
    >>> db = (Database()
    ...       .add_table("users", pd.DataFrame({"user_id": [1, 2]}), primary_key="user_id")
    ...       .add_table("orders", pd.DataFrame({"order_id": [7], "user_id": [1]}),
    ...                  primary_key="order_id", foreign_keys={"user_id": "users"}))
    >>> plan = RDBEncoder(db, "users", aggregations=("count",)).fit(
    ...     pd.DataFrame({"user_id": [1, 2]})).plan_
    >>> plan.output_names
    ['count(orders)']
    >>> print(plan.to_sql("spark"))  # doctest: +ELLIPSIS
    WITH __skfm_g0 AS (
      SELECT
        `e`.`__skfm_eid`,
        COUNT(*) AS `f0`
      FROM `entities` AS e
      INNER JOIN `orders` AS t1
        ON `t1`.`user_id` = `e`.`__skfm_key`
      GROUP BY
        `e`.`__skfm_eid`
    )
    ...
    """

    entity_table: str
    temporal: bool
    keys: dict
    times: dict
    features: tuple[Feature, ...]

    @property
    def output_names(self) -> list[str]:
        """Names of the output features, in order."""
        return [f.name for f in self.features if f.output]

    def to_sql(self, dialect: str = "duckdb", entities: str = "entities") -> str:
        """The feature query as SQL text of `dialect` (``"duckdb"`` or ``"spark"``).

        `entities` names the table of entities: columns ``__skfm_eid`` (row id),
        ``__skfm_key`` (primary key value) and, for temporal plans,
        ``__skfm_cutoff`` (cutoff time as Unix seconds).
        """
        query = feature_query(self, lambda name: exp.table_(name, quoted=True),
                              exp.table_(entities, quoted=True))
        return query.sql(dialect=dialect, pretty=True)


def hop_label(database: Database, direction: str, source: str, target: str, column: str) -> str:
    """``target``, or ``target[column]`` when the tables are linked by several keys or by a
    key of a table to itself."""
    if direction == "down":
        spec, parent = database.table(target), source
    else:
        spec, parent = database.table(source), target
    n_links = sum(1 for _, p in spec.foreign_keys if p == parent)
    return target if n_links == 1 and source != target else f"{target}[{column}]"


def enumerate_paths(database: Database, entity_table: str, max_depth: int) -> list[tuple[Hop, ...]]:
    """Every path of 1..`max_depth` hops from `entity_table`, depth-first.

    Children (down hops) come before parents (up hops), each sorted by name. A
    hop never goes straight back up the foreign key it just came down (that
    would return the row it started from); going back *down* the key it came up
    (a parent's other children, e.g. a flight's plane's other flights) is kept.
    """
    paths: list[tuple[Hop, ...]] = []

    def walk(table: str, path: tuple[Hop, ...]) -> None:
        if len(path) == max_depth:
            return
        steps = [("down", child, column) for child, column in database.children(table)]
        steps += [("up", parent, column)
                  for column, parent in sorted(database.table(table).foreign_keys)]
        for direction, target, column in steps:
            if path and direction == "up":
                last = path[-1]
                if last.direction == "down" and last.target == table and last.column == column:
                    continue
            hop = Hop(direction, table, target, column,
                      hop_label(database, direction, table, target, column))
            paths.append(path + (hop,))
            if len(paths) > MAX_FEATURES:
                raise ValueError(
                    f"more than {MAX_FEATURES} foreign-key paths of up to {max_depth} hops start "
                    f"at {entity_table!r}; lower max_depth"
                )
            walk(target, path + (hop,))

    walk(entity_table, ())
    return paths


def _path_text(path: tuple[Hop, ...]) -> str:
    return ".".join(h.label for h in path)


def _single_row(path, text: str, columns: list[Column], time_suffix: str) -> list[Feature]:
    """Copies of the columns of the one row a path of up hops reaches."""
    out = []
    for col in columns:
        if col.kind == CATEGORY:
            out += [Feature(f"{text}.{col.name}={value}", path, "is", col.name, col.kind, value)
                    for value in col.vocabulary]
        else:
            suffix = time_suffix if col.kind == TIME else ""
            out.append(Feature(f"{text}.{col.name}{suffix}", path, "value", col.name, col.kind))
    return out


def _many_rows(path, text: str, columns: list[Column], aggregations: tuple[str, ...],
               time_suffix: str) -> list[Feature]:
    """Aggregations of each column over the many rows a path with a down hop reaches."""
    out = []
    if path[-1].direction == "down" and "count" in aggregations:
        out.append(Feature(f"count({text})", path, "count"))
    for col in columns:
        if col.kind != CATEGORY:
            suffix = time_suffix if col.kind == TIME else ""
            out += [Feature(f"{agg}({text}.{col.name}{suffix})", path, agg, col.name, col.kind)
                    for agg in aggregations
                    if agg in VALUE_AGGREGATIONS and not (agg == "sum" and col.kind == TIME)]
            continue
        if "nunique" in aggregations:
            out.append(Feature(f"nunique({text}.{col.name})", path, "nunique", col.name,
                               col.kind))
        want_mode = "mode" in aggregations and bool(col.vocabulary)
        if "frac" in aggregations or want_mode:  # a mode is derived from the frequencies
            out += [Feature(f"frac({text}.{col.name}={value})", path, "frac", col.name,
                            col.kind, value, output="frac" in aggregations)
                    for value in col.vocabulary]
        if want_mode:
            out.append(Feature(f"mode({text}.{col.name})", path, "mode", col.name, col.kind))
    return out


def _windowed(path, text: str, columns: list[Column], aggregations: tuple[str, ...],
              windows: tuple[int, ...]) -> list[Feature]:
    """``count`` and ``mean`` over the events of the last ``w`` days, for each window."""
    out = []
    for window in windows:
        if "count" in aggregations:
            out.append(Feature(f"count({text}@{window}d)", path, "count", window=window))
        if "mean" in aggregations:
            out += [Feature(f"mean({text}@{window}d.{col.name})", path, "mean", col.name,
                            col.kind, window=window)
                    for col in columns if col.kind == NUMBER]
    return out


def build_plan(
    database: Database,
    entity_table: str,
    columns: dict[str, list[Column]],
    *,
    max_depth: int,
    aggregations: tuple[str, ...],
    time_windows: tuple[int, ...],
    entity_columns: bool,
    temporal: bool,
) -> FeaturePlan:
    """List the features for `entity_table` given the usable `columns` of each table.

    Parameters
    ----------
    database : Database
    entity_table : str
    columns : dict of str to list of Column
        Usable columns per table (keys, ignored and unusable columns removed).
    max_depth : int
        Longest path, in hops (0: only the entity's own columns).
    aggregations : tuple of str
        Subset of :data:`AGGREGATIONS`.
    time_windows : tuple of int
        Look-back windows in days for ``count`` and ``mean`` (temporal only): over
        the rows of a path that ends with a down hop into a table with a time column.
    entity_columns : bool
        Include the entity's own columns.
    temporal : bool
        Entities come with cutoff times.

    Returns
    -------
    FeaturePlan
    """
    time_suffix = ":days_ago" if temporal else ":days"
    features: list[Feature] = []
    paths = enumerate_paths(database, entity_table, max_depth)
    if entity_columns:
        paths = [()] + paths
    for path in paths:
        end = path[-1].target if path else entity_table
        text = _path_text(path) if path else entity_table
        cols = columns.get(end, [])
        if not any(h.direction == "down" for h in path):
            features += _single_row(path, text, cols, time_suffix)
            continue
        features += _many_rows(path, text, cols, aggregations, time_suffix)
        if (temporal and path[-1].direction == "down"
                and database.table(end).time_column is not None):
            features += _windowed(path, text, cols, aggregations, time_windows)
    features = _unique_names(features)
    n_out = sum(f.output for f in features)
    if n_out > MAX_FEATURES:
        raise ValueError(
            f"{n_out} features for max_depth={max_depth} exceed the limit of {MAX_FEATURES}; "
            "lower max_depth, pass fewer aggregations or ignore columns"
        )
    tables = {entity_table} | {h.target for f in features for h in f.path}
    return FeaturePlan(
        entity_table=entity_table,
        temporal=temporal,
        keys={t: database.table(t).primary_key for t in sorted(tables)},
        times={t: database.table(t).time_column for t in sorted(tables)},
        features=tuple(features),
    )


def _unique_names(features: list[Feature]) -> list[Feature]:
    """Append ``#2``, ``#3``... to names that collide (category values with odd text)."""
    seen: dict[str, int] = {}
    out = []
    for f in features:
        n = seen.get(f.name, 0) + 1
        seen[f.name] = n
        if n > 1:
            f = Feature(f"{f.name}#{n}", f.path, f.agg, f.column, f.kind, f.value, f.window,
                        f.output)
        out.append(f)
    return out
