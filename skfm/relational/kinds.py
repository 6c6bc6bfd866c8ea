"""Column kinds and aggregation names, shared by :mod:`~skfm.relational.plan`,
:mod:`~skfm.relational.sql` and :mod:`~skfm.relational.schema`."""

NUMBER, TIME, CATEGORY = "number", "time", "category"
VALUE_AGGREGATIONS = ("sum", "mean", "std", "min", "max")
"""Aggregations of a numeric (or time) column over many rows."""
CATEGORY_AGGREGATIONS = ("frac", "mode", "nunique")
"""Aggregations of a categorical column over many rows."""
AGGREGATIONS = ("count", *VALUE_AGGREGATIONS, *CATEGORY_AGGREGATIONS)
"""Every name the ``aggregations`` parameter accepts."""
COUNTING = ("count", "sum", "nunique")
"""Aggregations that are 0, not missing, for an entity with no rows on the path."""
