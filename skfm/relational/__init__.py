"""Relational databases as features: :class:`RDBEncoder` and the :class:`Database` it reads.

``RDBEncoder`` turns the neighbourhood of each entity in a relational database
into one fixed-length numeric row, by SQL aggregations along foreign-key paths,
without training (after RDBLearn). The SQL is built once with sqlglot and runs on
DuckDB (default, in-process) or Apache Spark.

Modules: ``database`` (the description), ``storage`` (its tables in DuckDB),
``schema`` (checks and column profiles), ``kinds`` (column kinds, aggregation
names), ``plan`` (paths and features), ``sql`` (the queries), ``engines``
(DuckDB and Spark runners), ``inputs`` (keys, cutoffs and passthrough columns
read from ``X``), ``features`` (planning the features at ``fit``, computing
them at ``transform``), ``encoder`` (the scikit-learn transformer),
``datasets`` (rel-f1 and nycflights13 with their prediction tasks) and ``demo``
(the relational part of ``skfm demo``).
"""

from skfm.relational.database import Database, TableSpec
from skfm.relational.encoder import RDBEncoder
from skfm.relational.plan import FeaturePlan

__all__ = ["Database", "FeaturePlan", "RDBEncoder", "TableSpec"]
