"""
Predicting from a relational database with RDBEncoder
=====================================================

A model for drivers usually needs what drivers *did*: their races, their results, their
qualifying laps. :class:`~skfm.relational.RDBEncoder` reads a small description of a database
(tables, primary and foreign keys, time columns), follows the foreign keys from each entity and
summarises every column it reaches on its own - counts, means, spreads, extremes, shares of
frequent categories, days since the last event - into one numeric row per entity, by SQL on
DuckDB. Nothing is trained, so it drops into a scikit-learn ``Pipeline`` in front of any
model.

Each row to predict for carries a *cutoff* time; only database rows strictly before it are
used, so training rows never see their own future. This example reads the Formula-1 database
(1950-2024, nine tables), predicts which drivers will qualify in the top three in the next
month (RelBench's ``driver-top3`` task) and compares encodings of growing depth.
"""

# %%
# The database: races at circuits; per race, each driver's result, qualifying position and
# championship standing, and each constructor's (team's) results and standings.
# :mod:`skfm.relational.datasets` reads the tables that ship with skfm (Parquet, 0.56 MB;
# source and licence in ``skfm/relational/data/f1/README.md``) and declares the keys and time
# columns. ``load_f1_tables(folder)`` reads the Ergast CSV files from a folder instead.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm.relational import RDBEncoder, datasets

tables = datasets.load_f1_tables()
db = datasets.f1_database(tables)
print(db)

# %%
# The rows to predict for: at dates ``t`` 30 days apart, the drivers who take part in a
# qualifying session in the 30 days after ``t``; the label is 1 for those who qualify in the
# top three at least once. The model learns from the dates before 2005 and is scored on those
# from 2010 on.
train, test = (datasets.f1_task(tables, "driver-top3", split) for split in ("train", "test"))
X_train, y_train = train[["driverId", "date"]], train["qualifying"]
X_test, y_test = test[["driverId", "date"]], test["qualifying"]
print(f"{len(train)} training rows ({y_train.mean():.0%} top three), "
      f"{len(test)} test rows ({y_test.mean():.0%} top three)")

# %%
# The encoder names every feature by its path and aggregation. ``count(results)`` is the
# number of races a driver entered before the cutoff; ``mean(results.points)`` the
# mean points per race; ``mean(results@365d.grid)`` the mean starting position over the last
# 365 days; ``min(qualifying.date:days_ago)`` the days since the last qualifying.
encoder = RDBEncoder(db, "drivers", cutoff_column="date", max_depth=1, time_windows=(365,))
features = encoder.set_output(transform="pandas").fit(X_train).transform(X_test)
print(features.shape)
driver = X_test["driverId"].map(tables["drivers"].set_index("driverId")["surname"])
shown = ["count(results)", "mean(results.points)", "mean(results@365d.grid)"]
print(pd.concat([X_test["date"].dt.date, driver.rename("driver"), features[shown]], axis=1)
      .head(4).round(1).to_string())

# %%
# The features are one SQL query, built with sqlglot and run by DuckDB (or Spark, with
# ``engine="spark"``). Here is the query of an encoder that only counts, per driver, the rows
# of each table pointing to drivers (qualifying, results, standings) strictly before each
# row's cutoff.
small = RDBEncoder(db, "drivers", cutoff_column="date", max_depth=1,
                   aggregations=("count",), entity_columns=False).fit(X_train.head())
print(small.plan_.to_sql("duckdb"))

# %%
# A logistic regression on the encoded rows: depth 0 is the driver table alone (nationality,
# age), depth 1 adds the tables that point to drivers (results, qualifying, standings),
# depth 2 also what those point to (races, constructors). Missing aggregates (no race yet) are
# filled with the training mean; the features, many and correlated, are standardised and
# their coefficients strongly penalised (``C=0.05``).
#
# Test rows see everything before their own cutoff, as a deployed model would. RelBench's
# published scores use the database frozen at 2010-01-01 instead, so they are not comparable
# (see :doc:`/benchmarks/rdb_accuracy` for both).
scores, models = {}, {}
for depth in [0, 1, 2]:
    model = make_pipeline(
        RDBEncoder(db, "drivers", cutoff_column="date", max_depth=depth, time_windows=(365,)),
        SimpleImputer(), StandardScaler(), LogisticRegression(C=0.05),
    ).fit(X_train, y_train)
    scores[depth] = roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])
    models[depth] = model
    print(f"max_depth={depth}: {model[0].get_feature_names_out().size:>3} features, "
          f"test ROC-AUC {scores[depth]:.3f}")

# %%
# Left, the test ROC-AUC per depth: the driver's own columns say little; their past results
# say much. Right, the ten largest coefficients of the depth-1 model (per standard deviation
# of the feature): recent grid and qualifying positions (low is good) and recent points.
coefficients = pd.Series(models[1][-1].coef_[0], models[1][0].get_feature_names_out())
top = coefficients[coefficients.abs().sort_values().index[-10:]]

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5), width_ratios=[1, 2])
left.bar([f"depth {depth}" for depth in scores], list(scores.values()), color="tab:orange")
left.axhline(0.5, color="gray", lw=1, ls="--")
left.set_ylim(0.4, 1.0)
left.set_ylabel("test ROC-AUC")
left.set_title("driver-top3, 2010 on")
right.barh(top.index, top.values, color=np.where(top.values > 0, "tab:blue", "tab:red"))
right.axvline(0, color="k", lw=0.8)
right.set_xlabel("coefficient (standardised feature)")
right.set_title("depth 1: largest coefficients")
right.tick_params(axis="y", labelsize=8)
fig.tight_layout()
plt.show()
