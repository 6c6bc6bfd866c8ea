"""What ``skfm info`` and ``skfm demo`` print."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from skfm._optional import import_matplotlib_pyplot


def print_info() -> None:
    """Version, the device ``"auto"`` picks, and a table of the checkpoints on this machine."""
    import torch

    from skfm._backend import describe_device, resolve_device
    from skfm._version import __version__
    from skfm._weights import list_checkpoints, skfm_home

    print(f"skfm {__version__}  (torch {torch.__version__})")
    print(f"device: {describe_device(resolve_device('auto'))}")
    print(f"user checkpoints: {skfm_home()}\n")
    rows = [_checkpoint_row(card) for card in list_checkpoints()]
    header = ("checkpoint", "family", "parameters", "steps", "sha256", "evaluation")
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) if rows else len(header[i])
              for i in range(5)]
    for row in (header, *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
              + "  " + row[5])
    print("\nEach checkpoint's card (recipe, hardware, full evaluation) is the .json beside it.")


def _checkpoint_row(card: dict) -> tuple[str, ...]:
    """One table row: name (and where it lies, if not shipped), family, parameters, steps,
    sha256 prefix, evaluation summary; ``?`` where the card says nothing."""
    from skfm._weights import load_checkpoint

    name = card["name"] + ("" if card["location"] == "shipped" else f" ({card['location']})")
    try:
        state = load_checkpoint(card["name"]).state
        parameters = f"{sum(value.size for value in state.values()):,}"
    except ValueError:  # no readable card, or bytes that do not match it
        parameters = "unreadable"
    steps = card.get("training", {}).get("steps")
    return (name, str(card.get("model", "?")), parameters,
            "?" if steps is None else f"{steps:,}", str(card.get("sha256", "?"))[:12],
            _evaluation_summary(card))


def _evaluation_summary(card: dict, width: int = 72) -> str:
    """The card's first averaged score table in one line, its own model first, e.g.
    ``openml_cc18 mean_roc_auc: tabswift 0.893, hgb 0.879, ...`` (cut at ``width``)."""
    family = str(card.get("model", ""))

    def averages(tree: dict, path: tuple[str, ...]):
        for key, value in tree.items():
            if isinstance(value, dict) and key.startswith("mean") and all(
                    isinstance(v, (int, float)) for v in value.values()):
                yield " ".join((*path, key)), value
            elif isinstance(value, dict):
                yield from averages(value, (*path, key))

    found = next(averages(card.get("evaluation", {}), ()), None)
    if found is None:
        return "-"
    title, scores = found
    first = sorted(scores, key=lambda model: model not in (family, "default"))
    line = f"{title}: " + ", ".join(f"{model} {scores[model]:.3f}" for model in first)
    return line if len(line) <= width else line[:width - 3] + "..."


def _classification_sets():
    from sklearn import datasets

    return {
        "breast_cancer": datasets.load_breast_cancer(return_X_y=True),
        "wine": datasets.load_wine(return_X_y=True),
        "iris": datasets.load_iris(return_X_y=True),
        "digits": datasets.load_digits(return_X_y=True),
    }


def _baselines(task: str) -> dict:
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if task == "classification":
        return {
            "LogisticRegression": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
            "RandomForest": RandomForestClassifier(n_estimators=300, random_state=0, n_jobs=-1),
            "HistGradientBoosting": HistGradientBoostingClassifier(random_state=0),
        }
    return {
        "Ridge": make_pipeline(StandardScaler(), Ridge()),
        "RandomForest": RandomForestRegressor(n_estimators=300, random_state=0, n_jobs=-1),
        "HistGradientBoosting": HistGradientBoostingRegressor(random_state=0),
    }


def _score(model, X_train, X_test, y_train, y_test, task) -> tuple[float, float]:
    from sklearn.metrics import r2_score, roc_auc_score

    start = time.perf_counter()
    model.fit(X_train, y_train)
    if task == "classification":
        proba = model.predict_proba(X_test)
        score = (
            roc_auc_score(y_test, proba[:, 1])
            if proba.shape[1] == 2
            else roc_auc_score(y_test, proba, multi_class="ovr")
        )
    else:
        score = r2_score(y_test, model.predict(X_test))
    return score, time.perf_counter() - start


def run_demo(plot: str | None = "skfm_demo.png", quick: bool = False) -> list[dict]:
    """Score every skfm estimator on bundled data against the usual baselines.

    Classification: ROC-AUC on scikit-learn's bundled datasets (50/50
    stratified split); regression: R² on the diabetes data; Mantis on UCR
    sets shipped with sktime; TimePEFTForecaster (R² of the forecast) on
    Airline and Lynx; SPNClassifier on gamed synthetic loan data; TabMGP on
    the diabetes data; RDBEncoder on the nycflights13 database that ships with
    skfm. Prints a table per method with fit+predict times and saves
    one figure per method.

    Parameters
    ----------
    plot : str or None, default="skfm_demo.png"
        The figure of the score table; the others go beside it, named with a
        suffix (``skfm_demo_spn.png``, ``skfm_demo_tabmgp.png``,
        ``skfm_demo_rdb.png``). None: no figures.
    quick : bool, default=False
        Smaller ensembles, fewer datasets.

    Returns
    -------
    list of dict
        The rows of the score table.
    """
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    from skfm.tabular.classifier import TabSwiftClassifier
    from skfm.tabular.regressor import TabSwiftRegressor

    figures = {}
    if plot:
        Path(plot).parent.mkdir(parents=True, exist_ok=True)
        figures = {name: _beside(plot, name) for name in ("spn", "tabmgp", "rdb")}
    n_estimators = 2 if quick else 8
    rows = []
    tasks = [("classification", name, data) for name, data in _classification_sets().items()]
    tasks.append(("regression", "diabetes", load_diabetes(return_X_y=True)))
    if quick:
        tasks = tasks[:1] + tasks[-1:]
    for task, name, (X, y) in tasks:
        split = train_test_split(
            X, y, test_size=0.5, random_state=0, stratify=y if task == "classification" else None
        )
        skfm_model = (
            TabSwiftClassifier(n_estimators=n_estimators)
            if task == "classification"
            else TabSwiftRegressor(n_estimators=n_estimators)
        )
        models = {type(skfm_model).__name__: skfm_model, **_baselines(task)}
        for model_name, model in models.items():
            score, seconds = _score(model, *split, task)
            rows.append(
                {"task": task, "dataset": name, "model": model_name, "score": score, "seconds": seconds}
            )
    from skfm.timeseries.demo import mantis_demo_rows, timepeft_demo_rows

    rows += mantis_demo_rows(quick=quick)
    rows += timepeft_demo_rows(quick=quick)
    _print_table(rows)
    saved = []
    if plot:
        _plot(rows, plot)
        saved.append(plot)
    saved.append(_plot_strategic(_strategic_demo(quick), figures.get("spn")))
    run_tabmgp_demo(plot=figures.get("tabmgp"), quick=quick)
    saved.append(figures.get("tabmgp"))
    saved.append(_plot_rdb(_rdb_demo(quick), figures.get("rdb")))
    saved = [str(path) for path in saved if path]
    if saved:
        print("\nfigures saved: " + ", ".join(saved))
    return rows


def _beside(plot: str, name: str) -> str:
    """``skfm_demo.png`` -> ``skfm_demo_<name>.png``, in the same folder."""
    path = Path(plot)
    return str(path.with_name(f"{path.stem}_{name}{path.suffix or '.png'}"))


def _print_table(rows: list[dict]) -> None:
    width = max(22, *(len(r["model"]) for r in rows))
    print(f"{'dataset':<14} {'metric':<8} {'model':<{width}} {'score':>7} {'seconds':>8}")
    for r in rows:
        metric = "ROC-AUC" if r["task"] == "classification" else "R2"
        print(f"{r['dataset']:<14} {metric:<8} {r['model']:<{width}} {r['score']:>7.3f} "
              f"{r['seconds']:>8.2f}")


def _pyplot():
    """``matplotlib.pyplot`` drawing to files; an ImportError naming ``skfm[plot]`` without it."""
    return import_matplotlib_pyplot("Agg")


def _save(fig, path: str) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # long model names are not cut off
    _pyplot().close(fig)


def _score_limits(scores: np.ndarray) -> tuple[float, float]:
    """Score-axis limits that show every bar: up to 1, down to 0.1 below the lowest score
    (not below 0 while every score is positive; a negative R² keeps its whole bar and a
    margin)."""
    low = float(scores.min())
    if low >= 0:
        return max(0.0, low - 0.1), 1.0
    return low - 0.05 * (1.0 - low), 1.0


def _plot(rows: list[dict], path: str) -> None:
    """One panel per dataset: each model's score as a bar, skfm's in orange."""
    plt = _pyplot()
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.2 * len(datasets), 3.4), squeeze=False)
    for ax, name in zip(axes[0], datasets, strict=True):
        subset = [r for r in rows if r["dataset"] == name]
        scores = np.array([r["score"] for r in subset])
        skfm_rows = [r["model"].startswith(("TabSwift", "Mantis", "TimePEFT")) for r in subset]
        colors = ["tab:orange" if mine else "tab:gray" for mine in skfm_rows]
        ax.barh([r["model"].replace("Classifier", "").replace("Regressor", "") for r in subset],
                scores, color=colors)
        ax.set_xlim(*_score_limits(scores))
        if scores.min() < 0:
            ax.axvline(0.0, color="black", lw=0.8)
        ax.set_title(f"{name} ({'ROC-AUC' if subset[0]['task'] == 'classification' else 'R²'})")
    _save(fig, path)


def _plot_strategic(rows: list[dict], path: str | None) -> str | None:
    """Accuracy per manipulation budget: TabSwift on clean and gamed rows, SPN on gamed rows.

    Returns ``path``, or None when there is nothing to draw or nowhere to save it.
    """
    if not path or not rows:
        return None
    plt = _pyplot()
    series = {"TabSwift, clean": ("tabswift_clean", "tab:gray"),
              "TabSwift, gamed": ("tabswift_gamed", "tab:red"),
              "SPN, gamed": ("spn_gamed", "tab:orange")}
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    x = np.arange(len(rows))
    for k, (label, (key, color)) in enumerate(series.items()):
        ax.bar(x + (k - 1) * 0.27, [r[key] for r in rows], width=0.27, label=label, color=color)
    ax.set_xticks(x, [f"budget {r['budget']}" for r in rows])
    ax.set_ylim(0.5, 1.1)
    ax.set_yticks(np.arange(0.5, 1.01, 0.1))
    ax.set_ylabel("accuracy")
    ax.set_title("SPNClassifier: refused applicants game the model")
    ax.legend(loc="upper center", ncol=3, fontsize=8)
    _save(fig, path)
    return path


def _rdb_demo(quick: bool) -> list[dict]:
    """RDBEncoder on nycflights13 flight delays (see :func:`skfm.relational.demo.run_rdb_demo`)."""
    from skfm.relational.demo import run_rdb_demo

    rows = run_rdb_demo(quick=quick)
    print(f"\nRDBEncoder, nycflights13 flight delays (leaves 15+ minutes late): "
          f"{rows[0]['train_rows']} training rows (February 2013), "
          f"{rows[0]['test_rows']} test rows (March)")
    print(f"{'model':<36} {'features':>8} {'ROC-AUC':>8} {'seconds':>8}")
    for r in rows:
        print(f"{r['model']:<36} {r['features']:>8} {r['roc_auc']:>8.3f} {r['seconds']:>8.1f}")
    return rows


def _plot_rdb(rows: list[dict], path: str | None) -> str | None:
    """ROC-AUC of each encoder + model on nycflights13 flight delays; ``path``, or None."""
    if not path:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 2.4))
    colors = ["tab:orange" if "TabSwift" in r["model"] else "tab:gray" for r in rows]
    ax.barh([f"{r['model']}\n({r['features']} features)" for r in rows],
            [r["roc_auc"] for r in rows], color=colors)
    ax.set_xlim(0.5, 1.0)
    ax.set_xlabel("ROC-AUC")
    ax.set_title("RDBEncoder: nycflights13, flight leaves 15+ min late")
    _save(fig, path)
    return path


def _strategic_demo(quick: bool = False) -> list[dict]:
    """Refused applicants game the deployed model: a plain TabSwift, or SPN built on it.

    Synthetic loan data (standardised); each refused test row moves to the nearest point the
    deployed model accepts within an l2 budget (``best_response``). Prints accuracy of the plain
    model on clean rows and on rows that gamed it, and of SPN on rows that gamed SPN.
    """
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from skfm.tabular.classifier import TabSwiftClassifier
    from skfm.tabular.strategic import SPNClassifier, best_response

    X, y = make_classification(n_samples=600, n_features=6, n_informative=4, random_state=0)
    X = StandardScaler().fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.5, random_state=0, stratify=y
    )
    plain = TabSwiftClassifier(n_estimators=2 if quick else 4).fit(X_train, y_train)
    rows = []
    for budget in [0.5] if quick else [0.25, 0.5, 1.0]:
        start = time.perf_counter()
        spn = SPNClassifier(plain, budget=budget).fit(X_train, y_train)
        rows.append(
            {
                "budget": budget,
                "tabswift_clean": plain.score(X_test, y_test),
                "tabswift_gamed": plain.score(best_response(plain, X_test, budget=budget), y_test),
                "spn_gamed": spn.score(spn.best_response(X_test), y_test),  # rows game SPN
                "spn_rule": spn.selected_,  # TabSwift's threshold rule or the robust logistic
                "seconds": time.perf_counter() - start,
            }
        )
    print("\nstrategic (SPNClassifier): accuracy when refused applicants game the model")
    print(
        f"{'budget':<8} {'TabSwift clean':>15} {'TabSwift gamed':>15} {'SPN gamed':>10} "
        f"{'SPN rule':>10} {'seconds':>8}"
    )
    for r in rows:
        print(
            f"{r['budget']:<8} {r['tabswift_clean']:>15.3f} {r['tabswift_gamed']:>15.3f} "
            f"{r['spn_gamed']:>10.3f} {r['spn_rule']:>10} {r['seconds']:>8.2f}"
        )
    return rows


def run_tabmgp_demo(plot: str | None = "skfm_tabmgp.png", quick: bool = False):
    """TabMGP on 100 rows of the diabetes data: posterior of the least-squares coefficients.

    Prints the estimate and 95% credible interval of each coefficient (features standardised)
    and saves the marginal posteriors to ``plot``. Returns the fitted TabMGPRegressor.
    """
    from sklearn.datasets import load_diabetes

    from skfm.tabular.martingale import TabMGPRegressor, plot_posterior
    from skfm.tabular.regressor import TabSwiftRegressor

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X, y = X.iloc[:100], y.iloc[:100]
    X = (X - X.mean()) / X.std()
    mgp = TabMGPRegressor(
        TabSwiftRegressor(n_estimators=1), n_rollouts=50 if quick else 100,
        horizon=100 if quick else 250,
    )
    start = time.perf_counter()
    mgp.fit(X, y)
    seconds = time.perf_counter() - start
    lower, upper = mgp.credible_interval(0.95)
    print(f"\nTabMGP, diabetes (100 rows): least-squares coefficients, {seconds:.1f} s")
    print(f"{'coefficient':<12} {'estimate':>9} {'95% credible interval':>24}")
    for name, est, lo, hi in zip(mgp.posterior_names_, mgp.estimate_, lower, upper, strict=True):
        print(f"{name:<12} {est:>9.2f}   [{lo:>8.2f}, {hi:>8.2f}]")
    if plot:
        _pyplot()
        _save(plot_posterior(mgp)[0].figure, plot)
    return mgp
