"""The two things an :class:`~skfm.relational.RDBEncoder` does with a database: fix the
feature list (:func:`plan_features`, at ``fit``) and compute the features of a set of
entities (:func:`compute_features`, at ``transform``).

Both work through an engine runner (:mod:`skfm.relational.engines`), so they are the same
on DuckDB and Spark.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from skfm.relational.database import Database
from skfm.relational.plan import FeaturePlan, build_plan, enumerate_paths
from skfm.relational.schema import profile_columns
from skfm.relational.sql import EID, feature_query


def plan_features(database: Database, runner, entity_table: str, *, max_depth: int,
                  aggregations: tuple[str, ...], n_top_categories: int,
                  time_windows: tuple[int, ...], entity_columns: bool,
                  before: float | None) -> FeaturePlan:
    """Profile the tables within `max_depth` hops of `entity_table` and build the plan.

    `before` is the latest cutoff time (Unix seconds) of the task: column statistics use
    only the rows before it; None for a task without cutoff times (every row counts).
    """
    paths = enumerate_paths(database, entity_table, max_depth)
    tables = dict.fromkeys([entity_table] + [h.target for p in paths for h in p])
    columns = {
        table: profile_columns(database, runner, table, before=before,
                               n_top_categories=n_top_categories)
        for table in tables
    }
    return build_plan(
        database,
        entity_table,
        columns,
        max_depth=max_depth,
        aggregations=aggregations,
        time_windows=time_windows,
        entity_columns=entity_columns,
        temporal=before is not None,
    )


def compute_features(plan: FeaturePlan, runner, entities: pd.DataFrame) -> np.ndarray:
    """Run `plan` for distinct `entities` (an ``EID`` column numbering them 0..n-1, the key,
    and the cutoff of a temporal plan); rows in ``EID`` order, output columns only."""
    result = runner.features(lambda table: feature_query(plan, runner.ref, table), entities)
    result = result.set_index(EID).reindex(np.arange(len(entities)))
    matrix = np.full((len(entities), len(plan.features)), np.nan)
    for i, feature in enumerate(plan.features):
        if feature.agg != "mode":
            matrix[:, i] = result[f"f{i}"].to_numpy(dtype=np.float64, na_value=np.nan)
    for i, feature in enumerate(plan.features):
        if feature.agg == "mode":
            helpers = [j for j, f in enumerate(plan.features)
                       if f.agg == "frac" and f.path == feature.path
                       and f.column == feature.column]
            matrix[:, i] = _mode(matrix[:, helpers])
    matrix = matrix[:, [i for i, f in enumerate(plan.features) if f.output]]
    overflowed = np.isinf(matrix).any(axis=0)
    if overflowed.any():
        names = [name for name, bad in zip(plan.output_names, overflowed, strict=True) if bad]
        raise ValueError(
            f"features {names[:5]} overflowed float64 to infinity: the columns they "
            "aggregate hold values too large in magnitude for their sums or variances; "
            "rescale those columns (e.g. to other units)"
        )
    return matrix


def _mode(fractions: np.ndarray) -> np.ndarray:
    """Index of the largest share (first on ties); k when all are 0; NaN without rows."""
    k = fractions.shape[1]
    out = np.argmax(fractions, axis=1).astype(np.float64)
    out[np.nanmax(fractions, axis=1, initial=-1.0) <= 0] = k
    out[np.isnan(fractions).all(axis=1)] = np.nan
    return out
