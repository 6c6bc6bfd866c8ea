"""
Predicting from a relational database with RDBEncoder
=====================================================

Whether a flight leaves late depends on more than its own row: on the weather at its airport,
on its plane, on how the airline's and the airport's earlier flights fared.
:class:`~skfm.relational.RDBEncoder` reads a small description of a database (tables, primary
and foreign keys, time columns), follows the foreign keys from each entity and summarises
every column it reaches on its own - counts, means, spreads, extremes, shares of frequent
categories, days since the last event - into one numeric row per entity, by SQL on DuckDB.
Nothing is trained, so it drops into a scikit-learn ``Pipeline`` in front of any model.

Each row to predict for carries a *cutoff* time; only database rows strictly before it are
used, so training rows never see their own future. This example reads the nycflights13
database (flights from New York City, January to March 2013), predicts which flights leave at
least 15 minutes late from what is known at their scheduled departure, and compares encodings
of growing depth.
"""

# %%
# The database: flights, each pointing to its plane, its airline, its origin and destination
# airports and the weather at its origin in its hour; the weather points to its airport.
# :mod:`skfm.relational.datasets` reads the tables that ship with skfm (Parquet, 1.3 MB;
# source and licence (CC0) in ``skfm/relational/data/nycflights13/README.md``) and declares
# the keys and time columns. A foreign key is one column, so flights reach their weather row
# through ``weather_id``, the origin and hour they share.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm.relational import Database, RDBEncoder, datasets

tables = datasets.load_nycflights13_tables()
db = datasets.nycflights13_database(tables)
print(db)

# %%
# The rows to predict for: 3,000 flights of February to learn from, 1,500 of March to score.
# The cutoff is the scheduled departure; the local hour of that departure, known in advance,
# is passed through as a feature. January is history only.
#
# What counts as known at the cutoff is set by the time columns: a flight is dated by its
# departure (``departed``: the scheduled departure plus the delay), so a flight's own delay,
# and that of every flight still on the ground, is hidden from its features; its arrival
# columns, known only hours later, are left out of the database.
train = datasets.flight_delay_task(tables, "train", max_rows=3000)
test = datasets.flight_delay_task(tables, "test", max_rows=1500)
columns = ["flight_id", "scheduled", "hour"]
X_train, y_train = train[columns], train["delayed"]
X_test, y_test = test[columns], test["delayed"]
print(f"{len(train)} training flights ({y_train.mean():.0%} late), "
      f"{len(test)} test flights ({y_test.mean():.0%} late)")

# %%
# The encoder names every feature by its path and aggregation. ``weather.visib`` is the
# visibility at the flight's origin in its hour; ``mean(airlines.flights@1d.dep_delay)`` the
# mean delay of the airline's flights that left in the day before the cutoff;
# ``count(planes.flights)`` the flights its plane flew from New York before. A flight
# scheduled on the hour has no weather: its hour's observation is dated at the cutoff, not
# before it. The planes table lacks most planes of two airlines and the airports table four
# destinations: the encoder warns, and those flights get missing values on those hops.
encoder = RDBEncoder(db, "flights", cutoff_column="scheduled", entity_columns=False,
                     aggregations=("count", "mean"), time_windows=(1,))
features = encoder.set_output(transform="pandas").fit(X_train).transform(X_test)
print(features.shape)
shown = ["hour", "weather.visib", "mean(airlines.flights@1d.dep_delay)", "count(planes.flights)"]
print(pd.concat([X_test["scheduled"], features[shown].round(1)], axis=1).head(4).to_string())

# %%
# The features are one SQL query, built with sqlglot and run by DuckDB (or Spark, with
# ``engine="spark"``). Here is the query of an encoder that only counts, per flight, the
# earlier flights of its plane and of its airline, strictly before each row's cutoff, on a
# database of the key columns alone, described by hand.
flights = tables["flights"][["flight_id", "tailnum", "carrier", "departed"]]
keys_only = (Database()
             .add_table("planes", tables["planes"][["tailnum"]], primary_key="tailnum")
             .add_table("airlines", tables["airlines"][["carrier"]], primary_key="carrier")
             .add_table("flights", flights, primary_key="flight_id",
                        foreign_keys={"tailnum": "planes", "carrier": "airlines"},
                        time_column="departed"))
small = RDBEncoder(keys_only, "flights", cutoff_column="scheduled", aggregations=("count",),
                   entity_columns=False, passthrough=False)
print(small.fit(X_train.head()).plan_.to_sql("duckdb"))

# %%
# A logistic regression on the encoded rows: depth 0 is the hour alone, depth 1 adds what a
# flight points to (plane, airline, airports, weather), depth 2 also the rows pointing to
# those: the earlier flights of the same plane, airline and airports, and the airport's
# earlier weather. Missing aggregates are filled with the training mean (0 for a feature that
# never has a value); the features, many and correlated, are standardised and their
# coefficients strongly penalised (``C=0.05``).
scores, models = {}, {}
for depth in [0, 1, 2]:
    model = make_pipeline(
        RDBEncoder(db, "flights", cutoff_column="scheduled", max_depth=depth,
                   entity_columns=False, aggregations=("count", "mean"), time_windows=(1,)),
        SimpleImputer(keep_empty_features=True), StandardScaler(),
        LogisticRegression(C=0.05, max_iter=1000),
    ).fit(X_train, y_train)
    scores[depth] = roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])
    models[depth] = model
    print(f"max_depth={depth}: {model[0].get_feature_names_out().size:>3} features, "
          f"test ROC-AUC {scores[depth]:.3f}")

# %%
# Left, the test ROC-AUC per depth: late flights cluster in the evening, and bad weather and
# a busy day add to that. Right, the ten largest coefficients of the depth-2 model (per
# standard deviation of the feature).
coefficients = pd.Series(models[2][-1].coef_[0], models[2][0].get_feature_names_out())
top = coefficients[coefficients.abs().sort_values().index[-10:]]

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5), width_ratios=[1, 2])
left.bar([f"depth {depth}" for depth in scores], list(scores.values()), color="tab:orange")
left.axhline(0.5, color="gray", lw=1, ls="--")
left.set_ylim(0.4, 1.0)
left.set_ylabel("test ROC-AUC")
left.set_title("leaves 15+ min late, March")
right.barh(top.index, top.values, color=np.where(top.values > 0, "tab:blue", "tab:red"))
right.axvline(0, color="k", lw=0.8)
right.set_xlabel("coefficient (standardised feature)")
right.set_title("depth 2: largest coefficients")
right.tick_params(axis="y", labelsize=8)
fig.tight_layout()
plt.show()
