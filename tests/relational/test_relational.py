"""RDBEncoder and Database: features by hand, leakage, bad input, persistence, sklearn API."""

import datetime
import pickle

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import check_param_validation

from skfm import TabSwiftClassifier
from skfm.relational import Database, RDBEncoder
from skfm.relational.plan import MAX_FEATURES

duckdb = pytest.importorskip("duckdb")

CUTOFF = pd.Timestamp("2024-03-01")


def shop_tables():
    """A tiny shop: customers <- orders <- items -> products."""
    customers = pd.DataFrame({
        "customer_id": [1, 2, 3, 4],
        "segment": ["retail", "retail", "pro", "pro"],
        "age": [31.0, 45.0, np.nan, 28.0],
        "joined": pd.to_datetime(["2020-01-01", "2021-06-01", "2022-02-01", "2023-09-15"]),
    })
    products = pd.DataFrame({
        "product_id": ["p1", "p2", "p3"],
        "category": ["book", "toy", "book"],
        "price": [10.0, 25.0, 7.5],
    })
    orders = pd.DataFrame({
        "order_id": [100, 101, 102, 103, 104, 105, 106, 107],
        "customer_id": [1, 1, 1, 2, 2, 3, 1, 2],
        "channel": ["web", "shop", "web", "web", "web", "shop", "web", "shop"],
        "amount": [20.0, 35.0, 12.5, 50.0, 5.0, 7.5, 99.0, 60.0],
        "ts": pd.to_datetime(format="ISO8601", arg=[
            "2024-01-05", "2024-02-10", "2024-02-25", "2024-01-20",
            "2024-02-28 23:00:00", "2023-12-01 00:00:00", "2024-03-05", "2024-04-01",
        ]),
    })
    items = pd.DataFrame({
        "item_id": range(12),
        "order_id": [100, 100, 101, 102, 103, 103, 103, 104, 105, 106, 107, 107],
        "product_id": ["p1", "p2", "p2", "p3", "p1", "p1", "p2", "p3", "p3", "p2", "p1", "p3"],
        "qty": [1, 2, 1, 3, 1, 1, 2, 5, 1, 4, 2, 2],
    })
    return {"customers": customers, "products": products, "orders": orders, "items": items}


def shop_database(tables=None, **overrides):
    t = shop_tables() if tables is None else tables
    spec = {
        "customers": dict(primary_key="customer_id"),
        "products": dict(primary_key="product_id"),
        "orders": dict(primary_key="order_id", foreign_keys={"customer_id": "customers"},
                       time_column="ts"),
        "items": dict(primary_key="item_id",
                      foreign_keys={"order_id": "orders", "product_id": "products"}),
    }
    db = Database()
    for name in ["customers", "products", "orders", "items"]:
        db.add_table(name, t[name], **{**spec[name], **overrides.get(name, {})})
    return db


def entities(cutoff=CUTOFF):
    return pd.DataFrame({"customer_id": [1, 2, 3, 4, 99], "cutoff": [cutoff] * 5})


@pytest.fixture(scope="module")
def shop():
    return shop_database()


def encode(db, X=None, **params):
    X = entities() if X is None else X
    params = {"cutoff_column": "cutoff", **params}
    enc = RDBEncoder(db, "customers", **params).set_output(transform="pandas")
    return enc.fit_transform(X)


# ------------------------------------------------------------------ features
def test_features_match_pandas(shop):
    out = encode(shop, max_depth=3, aggregations=("count", "mean", "min", "max", "frac"))
    t = shop_tables()
    orders = t["orders"][t["orders"]["ts"] < CUTOFF]
    for cid, row in zip([1, 2, 3, 4], out.iloc[:4].itertuples(index=False), strict=True):
        mine = orders[orders["customer_id"] == cid]
        row = dict(zip(out.columns, row, strict=True))
        assert row["count(orders)"] == len(mine)
        np.testing.assert_allclose(row["mean(orders.amount)"], mine["amount"].mean())
        days = (CUTOFF - mine["ts"]).dt.total_seconds() / 86400
        np.testing.assert_allclose(row["min(orders.ts:days_ago)"], days.min())
        np.testing.assert_allclose(row["frac(orders.channel=web)"],
                                   (mine["channel"] == "web").mean())
        lines = t["items"][t["items"]["order_id"].isin(mine["order_id"])]
        assert row["count(orders.items)"] == len(lines)
        np.testing.assert_allclose(row["mean(orders.items.qty)"], lines["qty"].mean())
        prices = lines.merge(t["products"], on="product_id")["price"]
        np.testing.assert_allclose(row["mean(orders.items.products.price)"], prices.mean())
        joined = t["customers"].set_index("customer_id").loc[cid, "joined"]
        np.testing.assert_allclose(row["customers.joined:days_ago"],
                                   (CUTOFF - joined).total_seconds() / 86400)


def test_no_neighbours_and_unknown_keys_are_missing_not_errors(shop):
    out = encode(shop, aggregations=("count", "sum", "mean", "nunique"))
    no_orders, unknown = out.iloc[3], out.iloc[4]
    assert no_orders["count(orders)"] == 0 and no_orders["sum(orders.amount)"] == 0
    assert np.isnan(no_orders["mean(orders.amount)"])
    assert no_orders["nunique(orders.channel)"] == 0
    assert no_orders["customers.segment=pro"] == 1
    assert unknown["count(orders)"] == 0 and np.isnan(unknown["customers.age"])
    assert np.isnan(unknown["customers.segment=pro"])


def test_planted_future_rows_do_not_change_output():
    baseline = encode(shop_database(), max_depth=3, time_windows=(30,),
                      aggregations=("count", "mean", "std", "min", "max", "frac", "mode"))
    t = shop_tables()
    future = pd.DataFrame({"order_id": [200, 201], "customer_id": [1, 3],
                           "channel": ["phone", "web"], "amount": [1e6, -5.0],
                           "ts": [CUTOFF, CUTOFF + pd.Timedelta(days=400)]})
    t["orders"] = pd.concat([t["orders"], future], ignore_index=True)
    t["items"] = pd.concat([t["items"], pd.DataFrame(
        {"item_id": [50, 51], "order_id": [200, 201], "product_id": ["p1", "p2"],
         "qty": [1000, 7]})], ignore_index=True)
    planted = encode(shop_database(t), max_depth=3, time_windows=(30,),
                     aggregations=("count", "mean", "std", "min", "max", "frac", "mode"))
    pd.testing.assert_frame_equal(planted, baseline)


def test_cutoffs_per_row_and_duplicates():
    db = shop_database()
    X = pd.DataFrame({"customer_id": [1, 1, 1, 1],
                      "cutoff": pd.to_datetime(["2024-01-01", "2024-02-01", "2024-12-31",
                                                "2024-02-01"])})
    out = encode(db, X, aggregations=("count",))
    assert out["count(orders)"].tolist() == [0, 1, 4, 1]
    assert out.index.tolist() == X.index.tolist()


def test_without_cutoff_every_row_counts(shop):
    X = pd.DataFrame({"customer_id": [1, 2]})
    out = encode(shop, X, cutoff_column=None, aggregations=("count", "min"))
    assert out["count(orders)"].tolist() == [4, 3]
    assert "min(orders.ts:days)" in out.columns


def test_time_windows_mode_nunique(shop):
    out = encode(shop, time_windows=(10, 60),
                 aggregations=("count", "mean", "mode", "nunique"))
    first = out.iloc[0]
    assert first["count(orders@10d)"] == 1  # 2024-02-25
    assert first["count(orders@60d)"] == 3
    np.testing.assert_allclose(first["mean(orders@60d.amount)"], (20 + 35 + 12.5) / 3)
    assert first["nunique(orders.channel)"] == 2
    assert first["mode(orders.channel)"] == 0  # "web" is the most frequent channel overall
    assert out.iloc[2]["mode(orders.channel)"] == 1  # only "shop"
    assert np.isnan(out.iloc[3]["mode(orders.channel)"])
    assert not any(name.startswith("frac(") for name in out.columns)


def test_names_set_output_and_passthrough(shop):
    X = entities().assign(score=[1.0, 2.0, np.nan, 4.0, 5.0])
    X.index = list("abcde")
    enc = RDBEncoder(shop, "customers", cutoff_column="cutoff").fit(X)
    names = enc.get_feature_names_out()
    assert names[0] == "score" and len(set(names)) == len(names)
    raw = enc.transform(X)
    assert raw.dtype == np.float64 and raw.shape == (5, len(names))
    frame = enc.set_output(transform="pandas").transform(X)
    assert list(frame.columns) == list(names) and list(frame.index) == list("abcde")
    np.testing.assert_array_equal(frame.to_numpy(), raw)
    no_pass = RDBEncoder(shop, "customers", cutoff_column="cutoff", passthrough=False).fit(X)
    assert "score" not in no_pass.get_feature_names_out()


def test_passthrough_encodes_what_the_tabular_estimators_accept(shop, tmp_path):
    """Text, categoricals, booleans and times pass through as floats, with missing values and
    categories unseen by fit as NaN; the names and pandas output still work."""
    X = entities().assign(
        city=["Oslo", "Rome", None, "Oslo", "Rome"],
        tier=pd.Categorical(["b", "a", "b", None, "a"]),
        vip=pd.array([True, False, None, True, False], dtype="boolean"),
        since=pd.to_datetime(["1970-01-02", None, "1970-01-01", "2024-01-01", "1970-01-03"]),
        mixed=np.array([1, "a", None, 2.5, "a"], dtype=object),
    )
    enc = RDBEncoder(shop, "customers", cutoff_column="cutoff").set_output(transform="pandas")
    out = enc.fit_transform(X)
    assert list(out.columns[:5]) == ["city", "tier", "vip", "since", "mixed"]
    np.testing.assert_array_equal(out["city"], [0, 1, np.nan, 0, 1])  # Oslo < Rome
    np.testing.assert_array_equal(out["tier"], [1, 0, 1, np.nan, 0])
    np.testing.assert_array_equal(out["vip"], [1, 0, np.nan, 1, 0])
    np.testing.assert_array_equal(out["since"], [86400, np.nan, 0, 1704067200, 172800])
    np.testing.assert_array_equal(out["mixed"], [0, 2, np.nan, 1, 2])  # "1" < "2.5" < "a"
    unseen = X.assign(city=["Paris", "Oslo", "Rome", None, "Oslo"],
                      tier=pd.Categorical(["c", "b", "a", "a", "b"]))
    later = enc.transform(unseen)
    np.testing.assert_array_equal(later["city"], [np.nan, 0, 1, np.nan, 0])
    np.testing.assert_array_equal(later["tier"], [np.nan, 1, 0, 0, 1])
    plain = clone(enc).set_output(transform="default").fit(X)
    assert plain.transform(X).dtype == np.float64
    assert list(plain.get_feature_names_out()) == list(out.columns)
    path = tmp_path / "enc.skops"
    sio.dump(plain, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_array_equal(loaded.transform(unseen), later.to_numpy())


def test_string_keys_with_a_string_passthrough_column():
    """The issue's frame: text keys and a text column, as a user of rdblearn writes it."""
    users = pd.DataFrame({"user_id": ["1", "2"], "age": [30.0, 40.0]})
    db = Database().add_table("users", users, primary_key="user_id")
    X = pd.DataFrame({"user_id": ["1", "2"], "cat_col": ["a", "b"]})
    out = RDBEncoder(db, "users").set_output(transform="pandas").fit_transform(X)
    assert list(out.columns) == ["cat_col", "users.age"]
    np.testing.assert_array_equal(out.to_numpy(), [[0.0, 30.0], [1.0, 40.0]])


def test_max_depth_zero_is_the_entity_table_alone(shop):
    out = encode(shop, max_depth=0)
    assert all(name.startswith("customers.") for name in out.columns)


def test_cyclic_schema_is_bounded_by_max_depth():
    staff = pd.DataFrame({"staff_id": [1, 2, 3], "manager_id": [np.nan, 1, 1],
                          "team_id": [10, 10, 11], "salary": [100.0, 60.0, 70.0]})
    teams = pd.DataFrame({"team_id": [10, 11], "lead_id": [1, 3], "budget": [5.0, 3.0]})
    db = (Database()
          .add_table("staff", staff, primary_key="staff_id",
                     foreign_keys={"manager_id": "staff", "team_id": "teams"})
          .add_table("teams", teams, primary_key="team_id", foreign_keys={"lead_id": "staff"}))
    enc = RDBEncoder(db, "staff", max_depth=3, aggregations=("count", "mean"))
    out = enc.set_output(transform="pandas").fit_transform(pd.DataFrame({"staff_id": [1, 2, 3]}))
    assert out.shape[1] == len(set(out.columns)) > 10
    assert out["count(staff[manager_id])"].tolist() == [2, 0, 0]  # direct reports
    assert out.loc[1, "staff[manager_id].salary"] == 100.0  # the manager's salary


def test_works_in_a_pipeline_with_cross_validation_and_grid_search(shop):
    rng = np.random.default_rng(0)
    cutoffs = pd.date_range("2024-01-01", periods=10, freq="7D")
    X = pd.DataFrame({"customer_id": np.tile([1, 2, 3, 4], 10),
                      "cutoff": np.repeat(cutoffs, 4)})
    y = (rng.random(40) > 0.5).astype(int)
    pipe = Pipeline([("rdb", RDBEncoder(shop, "customers", cutoff_column="cutoff")),
                     ("clf", TabSwiftClassifier(n_estimators=1))])
    scores = cross_val_score(pipe, X, y, cv=KFold(2), scoring="accuracy")
    assert scores.shape == (2,)
    grid = GridSearchCV(pipe, {"rdb__max_depth": [1, 2], "clf__softmax_temperature": [0.9]},
                        cv=KFold(2)).fit(X, y)
    assert grid.best_params_["rdb__max_depth"] in (1, 2)
    assert clone(pipe)["rdb"].database is shop


# ----------------------------------------------------------------- bad input
def _fit(db, X=None, **params):
    return RDBEncoder(db, "customers", **{"cutoff_column": "cutoff", **params}).fit(
        entities() if X is None else X)


def test_unknown_table_and_columns():
    db = shop_database()
    with pytest.raises(ValueError, match="unknown table 'clients'"):
        RDBEncoder(db, "clients").fit(entities())
    with pytest.raises(ValueError, match="points at unknown table 'shops'"):
        _fit(shop_database(orders={"foreign_keys": {"customer_id": "shops"}}))
    with pytest.raises(ValueError, match="foreign key column 'client_id' is not in table"):
        shop_database(orders={"foreign_keys": {"client_id": "customers"}})
    with pytest.raises(ValueError, match="time_column column 'when' is not in table 'orders'"):
        shop_database(orders={"time_column": "when"})
    with pytest.raises(ValueError, match="give a .csv, .tsv"):
        Database().add_table("orders", "orders.json", primary_key="order_id")
    with pytest.raises(ValueError, match="key_column 'cid' is not a column of X"):
        _fit(db, key_column="cid")
    with pytest.raises(ValueError, match="cutoff_column 'asof' is not a column of X"):
        _fit(db, cutoff_column="asof")


def test_foreign_key_to_a_table_without_key_and_dangling_values():
    with pytest.raises(ValueError, match="which has no primary key"):
        _fit(shop_database(products={"primary_key": None}))
    t = shop_tables()
    t["orders"].loc[0, "customer_id"] = 77
    with pytest.warns(UserWarning, match="1 rows of orders have a customer_id that names no row"):
        out = encode(shop_database(t))
    assert out.iloc[0]["count(orders)"] == 2


def test_duplicate_or_missing_primary_keys():
    t = shop_tables()
    t["products"].loc[2, "product_id"] = "p1"
    with pytest.raises(ValueError, match=r"products.product_id is not unique: 1 duplicate.*'p1'"):
        _fit(shop_database(t))
    t = shop_tables()
    t["customers"]["customer_id"] = [1.0, 2.0, np.nan, 4.0]
    with pytest.raises(ValueError, match="customers.customer_id has 1 missing values"):
        _fit(shop_database(t))


def test_times_that_are_not_times():
    db = shop_database()
    X = entities().assign(cutoff=20240301.0)
    with pytest.raises(ValueError, match="cutoff column 'cutoff' is not a time"):
        _fit(db, X)
    with pytest.raises(ValueError, match="cutoff column 'cutoff' has missing times"):
        _fit(db, entities().assign(cutoff=pd.NaT).astype({"cutoff": "datetime64[us]"}))
    t = shop_tables()
    t["orders"]["ts"] = t["orders"]["ts"].astype(str)
    with pytest.raises(ValueError, match="time column orders.ts has type VARCHAR"):
        _fit(shop_database(t))
    with pytest.raises(ValueError, match="X column 'joined' held times during fit"):
        _fit(db, entities().assign(joined=CUTOFF)).transform(entities().assign(joined=1.5))


def test_times_of_day_and_durations_are_not_points_in_time():
    """Objects with an isoformat method that are not dates (datetime.time, Timedelta) are no
    cutoff times and no passthrough times: a ValueError or TypeError naming the column, not
    pandas' own message."""
    db = shop_database()
    for value in (datetime.time(9, 30), pd.Timedelta(hours=1)):
        column = pd.Series([value] * 5, dtype=object)
        with pytest.raises(ValueError, match="cutoff column 'cutoff' is not a time"):
            _fit(db, entities().assign(cutoff=column))
        with pytest.raises(TypeError, match="X column 'at' is not numeric.*passthrough"):
            _fit(db, entities().assign(at=column))
    dates = pd.Series([datetime.date(1970, 1, 2)] * 5, dtype=object)
    out = _fit(db, entities().assign(at=dates)).set_output(transform="pandas").transform(
        entities().assign(at=dates))
    np.testing.assert_array_equal(out["at"], 86400.0)


def test_bad_keys_and_parameters():
    db = shop_database()
    with pytest.raises(ValueError, match="key column 'customer_id' has NaN"):
        _fit(db, entities().assign(customer_id=[1.0, np.nan, 3.0, 4.0, 5.0]))
    with pytest.raises(ValueError, match="must hold numbers like customers.customer_id"):
        _fit(db, entities().assign(customer_id=list("abcde")))
    with pytest.raises(TypeError, match="X column 'note' is not numeric.*passthrough columns"):
        _fit(db, entities().assign(note=[{"a": 1}] * 5))
    with pytest.raises(ValueError, match="X column 'score' is not numeric.*numeric during fit"):
        _fit(db, entities().assign(score=1.0)).transform(entities().assign(score="high"))
    with pytest.raises(ValueError, match="unknown aggregations \\['median'\\]"):
        _fit(db, aggregations=("mean", "median"))
    with pytest.raises(ValueError, match="'max_depth' parameter of RDBEncoder must be an int in "
                       r"the range \[0, inf\)"):
        _fit(db, max_depth=-1)
    with pytest.raises(ValueError, match="set cutoff_column too"):
        _fit(db, cutoff_column=None, time_windows=(30,))
    with pytest.raises(ValueError, match="time_windows must be None or a tuple of positive"):
        _fit(db, time_windows=(30, 0))
    with pytest.raises(ValueError, match="'engine' parameter of RDBEncoder must be a str among"):
        _fit(db, engine="postgres")
    with pytest.raises(TypeError, match="'database' parameter of RDBEncoder must be an instance "
                       "of 'skfm.relational.database.Database'"):
        RDBEncoder("shop.duckdb", "customers").fit(entities())
    with pytest.raises(ValueError, match="entity_table 'products' has no primary key"):
        RDBEncoder(shop_database(products={"primary_key": None}), "products").fit(
            pd.DataFrame({"product_id": ["p1"]}))
    staff = pd.DataFrame({"id": [1], "boss": [1], "mentor": [1], "x": [1.0]})
    wide = Database().add_table("s", staff, primary_key="id",
                                foreign_keys={"boss": "s", "mentor": "s"})
    with pytest.raises(ValueError, match="foreign-key paths of up to 12 hops"):
        RDBEncoder(wide, "s", max_depth=12).fit(pd.DataFrame({"id": [1]}))
    with pytest.raises(ValueError, match="exceed the limit"):
        RDBEncoder(wide, "s", max_depth=6).fit(pd.DataFrame({"id": [1]}))
    assert MAX_FEATURES >= 1000


def test_parameters_are_validated_the_scikit_learn_way(shop):
    check_param_validation("RDBEncoder", RDBEncoder(shop, "customers", cutoff_column="cutoff"))


def test_unfitted_and_wrong_width(shop):
    enc = RDBEncoder(shop, "customers", cutoff_column="cutoff")
    with pytest.raises(Exception, match="not fitted"):
        enc.transform(entities())
    enc.fit(entities())
    with pytest.raises(ValueError, match="Feature names unseen at fit time"):
        enc.transform(entities().assign(extra=1.0))
    arrays = RDBEncoder(shop, "customers", key_column=0).fit(np.array([[1.0, 0.5], [2.0, 0.1]]))
    with pytest.raises(ValueError, match="X has 3 features"):
        arrays.transform(np.ones((2, 3)))


# --------------------------------------------------------------- persistence
def test_pickle_and_skops_round_trip(shop, tmp_path):
    enc = RDBEncoder(shop, "customers", cutoff_column="cutoff", max_depth=3).fit(entities())
    expected = enc.transform(entities())
    again = pickle.loads(pickle.dumps(enc))
    np.testing.assert_array_equal(again.transform(entities()), expected)
    path = tmp_path / "enc.skops"
    sio.dump(enc, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_array_equal(loaded.transform(entities()), expected)
    assert list(loaded.get_feature_names_out()) == list(enc.get_feature_names_out())


def test_files_and_duckdb_connections_give_the_same_features(tmp_path):
    t = shop_tables()
    expected = encode(shop_database(t), max_depth=3)
    t["orders"].to_csv(tmp_path / "orders.csv", index=False)
    con = duckdb.connect(str(tmp_path / "shop.duckdb"))
    con.register("items_frame", t["items"])
    con.execute("CREATE TABLE items AS SELECT * FROM items_frame")
    con.register("products_frame", t["products"])
    con.execute(f"COPY products_frame TO '{tmp_path / 'products.parquet'}' (FORMAT parquet)")
    db = (Database(connection=con)
          .add_table("customers", t["customers"], primary_key="customer_id")
          .add_table("products", tmp_path / "products.parquet", primary_key="product_id")
          .add_table("orders", str(tmp_path / "orders.csv"), primary_key="order_id",
                     foreign_keys={"customer_id": "customers"}, time_column="ts")
          .add_table("items", primary_key="item_id",
                     foreign_keys={"order_id": "orders", "product_id": "products"}))
    got = encode(db, max_depth=3)
    pd.testing.assert_frame_equal(got, expected)
    enc = RDBEncoder(db, "customers", cutoff_column="cutoff", max_depth=3).fit(entities())
    con.close()  # the pickled copy reopens the file by its path
    again = pickle.loads(pickle.dumps(enc))
    np.testing.assert_array_equal(again.transform(entities()), expected.to_numpy())


def test_engine_state_is_shared_by_clones_and_dropped_by_pickling():
    db = shop_database()
    views = db.engine_state(("views", 1), dict)
    assert db.engine_state(("views", 1), list) is views  # made once
    enc = RDBEncoder(db, "customers", cutoff_column="cutoff").fit(entities())
    assert db.is_validated("duckdb") and not db.is_validated("spark")
    assert clone(enc).database.engine_state(("views", 1), list) is views
    again = pickle.loads(pickle.dumps(db))
    assert again.engine_state(("views", 1), list) == [] and not again.is_validated("duckdb")
    db.add_table("notes", pd.DataFrame({"note_id": [1]}), primary_key="note_id")
    assert not db.is_validated("duckdb")  # a new table is checked again

def test_in_memory_connection_cannot_travel():
    con = duckdb.connect()
    con.register("frame", pd.DataFrame({"id": [1, 2], "x": [1.0, 2.0]}))
    con.execute("CREATE TABLE things AS SELECT * FROM frame")
    db = Database(connection=con).add_table("things", primary_key="id")
    enc = RDBEncoder(db, "things").fit(pd.DataFrame({"id": [1, 2]}))
    moved = pickle.loads(pickle.dumps(enc))
    with pytest.raises(ValueError, match="pickled with an in-memory DuckDB connection"):
        moved.transform(pd.DataFrame({"id": [1, 2]}))


# ----------------------------------------------------------------- spark (fixture in conftest.py)
@pytest.mark.slow
def test_spark_gives_the_same_features_as_duckdb(spark):
    t = shop_tables()
    t["products"].loc[0, "category"] = "o'reilly"  # quoting survives both dialects
    params = dict(max_depth=3, time_windows=(30,),
                  aggregations=("count", "sum", "mean", "std", "min", "max", "frac", "mode",
                                "nunique"))
    on_duckdb = encode(shop_database(t), **params)
    on_spark = encode(shop_database(t), engine="spark", **params)
    assert list(on_spark.columns) == list(on_duckdb.columns)
    np.testing.assert_allclose(on_spark.to_numpy(), on_duckdb.to_numpy(), rtol=1e-9)
    fitted = RDBEncoder(shop_database(t), "customers", cutoff_column="cutoff", **params)
    fitted.fit(entities())
    np.testing.assert_allclose(fitted.set_params(engine="spark").transform(entities()),
                               on_duckdb.to_numpy(), rtol=1e-9)
