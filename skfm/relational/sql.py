"""SQL for the relational encoder, built as sqlglot syntax trees.

Every query here is dialect-neutral: the engines render it with
``query.sql(dialect="duckdb")`` or ``query.sql(dialect="spark")``, so DuckDB
and Spark run the same statement. Times are compared as whole Unix seconds
(``FLOOR(EPOCH(t))`` in DuckDB, ``FLOOR(UNIX_TIMESTAMP(t))`` in Spark).

The feature query joins the entities table (one row per distinct entity and
cutoff) to the rows of each path. Paths that share the rows they aggregate
over (the same hops up to the last down hop) share one ``GROUP BY``
subquery; their trailing up hops are ``LEFT JOIN`` s on a primary key, which
cannot multiply rows. Each hop into a table with a time column keeps only
rows strictly before the entity's cutoff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from skfm.relational.kinds import COUNTING, TIME

if TYPE_CHECKING:  # sql renders a plan; plan.py imports this module
    from skfm.relational.plan import Feature, FeaturePlan, Hop

EID, KEY, CUTOFF = "__skfm_eid", "__skfm_key", "__skfm_cutoff"
"""Columns of the entities table: row id, primary-key value, cutoff (Unix seconds)."""
SECONDS_PER_DAY = 86400.0

TableRef = Callable[[str], exp.Table]


def col(table: str | None, name: str) -> exp.Column:
    """A quoted column reference ``table.name``."""
    return exp.column(name, table=table, quoted=True)


def epoch_seconds(expression: exp.Expression) -> exp.Expression:
    """Whole Unix seconds of a date/timestamp expression."""
    return exp.Floor(this=exp.TimeToUnix(this=expression))


def literal(value) -> exp.Expression:
    """A SQL literal for a category value (string, number or boolean)."""
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def _double(expression: exp.Expression) -> exp.Expression:
    return exp.cast(expression, exp.DataType.Type.DOUBLE)


def _float(value: float) -> exp.Expression:
    """A DOUBLE literal (Spark reads a bare ``1.0`` as DECIMAL, whose averages round)."""
    return _double(exp.Literal.number(value))


def _category(expression: exp.Expression, value) -> exp.Expression:
    """Compare as text for string values, as is for numbers and booleans."""
    if isinstance(value, (bool, int, float)):
        return expression
    return exp.cast(expression, exp.DataType.Type.VARCHAR)


def _is_value(expression: exp.Expression, value) -> exp.Expression:
    return exp.EQ(this=_category(expression, value), expression=literal(value))


def _case(condition: exp.Expression, then, otherwise=None) -> exp.Expression:
    case = exp.Case().when(condition, then)
    return case.else_(otherwise) if otherwise is not None else case


class _Group:
    """Joins for every path that aggregates over the same rows."""

    def __init__(self, plan: FeaturePlan, table_ref: TableRef, entities: exp.Table,
                 prefix: tuple[Hop, ...]):
        self.plan = plan
        self.table_ref = table_ref
        self.prefix = prefix
        self.query = exp.select(col("e", EID)).from_(entities.as_("e"))
        self.aliases: dict[tuple[Hop, ...], str] = {}
        self.n_tables = 0

    def _next_alias(self) -> str:
        self.n_tables += 1
        return f"t{self.n_tables}"

    def alias(self, chain: tuple[Hop, ...], join_type: str) -> str:
        """Alias of the table reached by `chain`, joining it (and its prefixes) if needed."""
        if chain in self.aliases:
            return self.aliases[chain]
        if not chain:  # the entity's own row
            pk = self.plan.keys[self.plan.entity_table]
            on = exp.EQ(this=col("t0", pk), expression=col("e", KEY))
            self.query.join(self.table_ref(self.plan.entity_table).as_("t0"), on=on,
                            join_type=join_type, copy=False)
            self.aliases[chain] = "t0"
            return "t0"
        *head, hop = chain
        head = tuple(head)
        alias = None
        if hop.direction == "down":
            if head:
                parent_key = col(self.alias(head, join_type), self.plan.keys[hop.source])
            else:
                parent_key = col("e", KEY)
            alias = self._next_alias()
            on = exp.EQ(this=col(alias, hop.column), expression=parent_key)
        else:
            source = self.alias(head, join_type)
            alias = self._next_alias()
            on = exp.EQ(this=col(alias, self.plan.keys[hop.target]),
                        expression=col(source, hop.column))
        time = self.plan.times[hop.target]
        if self.plan.temporal and time is not None:
            before = exp.LT(this=epoch_seconds(col(alias, time)), expression=col("e", CUTOFF))
            on = exp.and_(on, before)
        self.query.join(self.table_ref(hop.target).as_(alias), on=on, join_type=join_type,
                        copy=False)
        self.aliases[chain] = alias
        return alias

    def rows(self) -> None:
        """Join the prefix: inner joins (an entity with no rows drops out here)."""
        for i in range(1, len(self.prefix) + 1):
            self.alias(self.prefix[:i], "inner")

    def value(self, feature: Feature) -> exp.Expression:
        """The per-row value a feature aggregates (or copies)."""
        alias = self.alias(feature.path, "left")
        raw = col(alias, feature.column)
        if feature.kind == TIME:
            seconds = epoch_seconds(raw)
            if self.plan.temporal:
                seconds = exp.Sub(this=col("e", CUTOFF), expression=seconds)
            return exp.Div(this=_double(exp.Paren(this=seconds)),
                           expression=_float(SECONDS_PER_DAY))
        return _double(raw)

    def window(self, feature: Feature) -> exp.Expression:
        """Condition: the row's event time lies within `feature.window` days of the cutoff."""
        alias = self.alias(self.prefix, "inner")
        time = self.plan.times[self.prefix[-1].target]
        start = exp.Sub(this=col("e", CUTOFF),
                        expression=_float(feature.window * SECONDS_PER_DAY))
        return exp.GTE(this=epoch_seconds(col(alias, time)), expression=start)

    def expression(self, feature: Feature) -> exp.Expression:
        """SQL of one feature within this group."""
        one, zero = _float(1.0), _float(0.0)
        if feature.agg == "count":
            if feature.window is None:
                return exp.Count(this=exp.Star())
            return exp.Sum(this=_case(self.window(feature), one, zero))
        if feature.agg == "value":
            return self.value(feature)
        if feature.agg == "is":
            alias = self.alias(feature.path, "left")
            pk = self.plan.keys[feature.path[-1].target if feature.path else
                                self.plan.entity_table]
            missing = exp.Is(this=col(alias, pk), expression=exp.Null())
            return (exp.Case().when(missing, exp.Null())
                    .when(_is_value(col(alias, feature.column), feature.value), one)
                    .else_(zero))
        if feature.agg == "frac":
            alias = self.alias(feature.path, "left")
            return exp.Avg(this=_case(_is_value(col(alias, feature.column), feature.value),
                                      one, zero))
        if feature.agg == "nunique":
            alias = self.alias(feature.path, "left")
            return exp.Count(this=exp.Distinct(expressions=[col(alias, feature.column)]))
        value = self.value(feature)
        if feature.window is not None:
            value = _case(self.window(feature), value)
        function = {"sum": exp.Sum, "mean": exp.Avg, "std": exp.StddevSamp,
                    "min": exp.Min, "max": exp.Max}[feature.agg]
        return function(this=value)


def feature_query(plan: FeaturePlan, table_ref: TableRef, entities: exp.Table) -> exp.Select:
    """The query computing every SQL feature of `plan` for the rows of `entities`.

    Parameters
    ----------
    plan : FeaturePlan
    table_ref : callable
        Maps a table name to the ``exp.Table`` the engine knows it by.
    entities : exp.Table
        Table with columns ``__skfm_eid``, ``__skfm_key`` (and
        ``__skfm_cutoff`` for temporal plans), one row per distinct entity.

    Returns
    -------
    sqlglot.exp.Select
        Columns ``__skfm_eid`` then ``f<i>`` for the i-th feature of
        ``plan.features`` (``mode`` features excepted: they are derived from
        their ``frac`` columns afterwards). Counting aggregations are 0, the
        others NULL, for an entity with no rows on a path.
    """
    groups: dict[tuple[Hop, ...], list[tuple[int, Feature]]] = {}
    for i, feature in enumerate(plan.features):
        if feature.agg != "mode":
            groups.setdefault(feature.prefix, []).append((i, feature))
    # Builders are called with copy=False: copying the growing tree at every call would make
    # building the query quadratic in the number of features.
    final = exp.select(col("e", EID)).from_(entities.as_("e"))
    outputs = []
    for g, (prefix, items) in enumerate(groups.items()):
        group = _Group(plan, table_ref, entities, prefix)
        group.rows()
        selects = [exp.alias_(group.expression(f), f"f{i}", quoted=True) for i, f in items]
        sub = group.query.select(*selects, copy=False)
        if prefix:
            sub.group_by(col("e", EID), copy=False)
        name = f"__skfm_g{g}"
        final.with_(name, as_=sub, copy=False)
        final.join(exp.table_(name, quoted=True),
                   on=exp.EQ(this=col(name, EID), expression=col("e", EID)),
                   join_type="left", copy=False)
        for i, feature in items:
            value = col(name, f"f{i}")
            if feature.agg in COUNTING and feature.many:
                value = exp.Coalesce(this=value, expressions=[exp.Literal.number(0)])
            outputs.append(exp.alias_(_double(value), f"f{i}", quoted=True))
    return final.select(*outputs, copy=False)


def table_profile(table: exp.Table, columns: list[tuple[str, bool]], time: str | None,
                  before: float | None) -> exp.Select:
    """Non-missing count ``c<i>`` of each ``(column, distinct)``, plus its distinct count
    ``d<i>`` where `distinct` is true.

    Only rows before `before` (Unix seconds) count when the table has a `time` column.
    """
    selects = []
    for i, (name, distinct) in enumerate(columns):
        value = col("t", name)
        selects.append(exp.alias_(exp.Count(this=value), f"c{i}", quoted=True))
        if distinct:
            count = exp.Count(this=exp.Distinct(expressions=[value]))
            selects.append(exp.alias_(count, f"d{i}", quoted=True))
    query = exp.select(*selects).from_(table.as_("t"))
    return _before(query, time, before)


def infinite_counts(table: exp.Table, columns: list[str]) -> exp.Select:
    """Number of infinite values ``i<j>`` in each numeric column ``columns[j]``, all rows."""
    infinity = exp.cast(exp.Literal.string("Infinity"), exp.DataType.Type.DOUBLE)
    selects = [
        exp.alias_(
            exp.Count(this=_case(exp.EQ(this=exp.Abs(this=_double(col("t", name))),
                                        expression=infinity), exp.Literal.number(1))),
            f"i{j}", quoted=True,
        )
        for j, name in enumerate(columns)
    ]
    return exp.select(*selects).from_(table.as_("t"))


def vocabulary(table: exp.Table, column: str, k: int, time: str | None,
               before: float | None) -> exp.Select:
    """The `k` most frequent values of `column`: by count, then by value."""
    value = col("t", column)
    query = (
        exp.select(exp.alias_(value, "value", quoted=True),
                   exp.alias_(exp.Count(this=exp.Star()), "n", quoted=True))
        .from_(table.as_("t"))
        .where(exp.not_(exp.Is(this=value, expression=exp.Null())))
        .group_by(value)
        .order_by(exp.Ordered(this=col(None, "n"), desc=True),
                  exp.Ordered(this=exp.cast(value, exp.DataType.Type.VARCHAR)))
        .limit(k)
    )
    return _before(query, time, before)


def _before(query: exp.Select, time: str | None, before: float | None) -> exp.Select:
    if time is None or before is None:
        return query
    return query.where(exp.LT(this=epoch_seconds(col("t", time)),
                              expression=exp.Literal.number(before)))


def key_profile(table: exp.Table, key: str) -> exp.Select:
    """Rows, missing keys and duplicate keys of a primary key column."""
    k = col("t", key)
    n = exp.Count(this=exp.Star())
    return exp.select(
        exp.alias_(n, "n", quoted=True),
        exp.alias_(exp.Sub(this=n, expression=exp.Count(this=k)), "missing", quoted=True),
        exp.alias_(exp.Sub(this=exp.Count(this=k),
                           expression=exp.Count(this=exp.Distinct(expressions=[k]))),
                   "duplicates", quoted=True),
    ).from_(table.as_("t"))


def duplicate_example(table: exp.Table, key: str) -> exp.Select:
    """One primary-key value that occurs more than once."""
    k = col("t", key)
    return (exp.select(exp.alias_(k, "value", quoted=True)).from_(table.as_("t"))
            .group_by(k).having(exp.GT(this=exp.Count(this=exp.Star()),
                                       expression=exp.Literal.number(1)))
            .order_by(exp.Ordered(this=exp.cast(k, exp.DataType.Type.VARCHAR))).limit(1))


def dangling(child: exp.Table, column: str, parent: exp.Table, key: str) -> exp.Select:
    """Number of child rows whose foreign key names no parent row."""
    fk = col("c", column)
    return (
        exp.select(exp.alias_(exp.Count(this=exp.Star()), "n", quoted=True))
        .from_(child.as_("c"))
        .join(parent.as_("p"), on=exp.EQ(this=col("p", key), expression=fk), join_type="left")
        .where(exp.and_(exp.not_(exp.Is(this=fk, expression=exp.Null())),
                        exp.Is(this=col("p", key), expression=exp.Null())))
    )

