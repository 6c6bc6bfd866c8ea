"""Tables larger than the context: each test row reads the training rows near it.

With ``large_table="retrieve"``, ``fit`` on a table with more rows than the context
holds clusters the rows (k-means on their z-scored encoded features, missing values
at the mean) into ``ceil(rows / max_context_rows)`` clusters, at most
``MAX_CLUSTERS``, and gives each cluster the ``max_context_rows`` rows nearest to
its centre as the context of its own ensemble members, their keys and values cached
once. A test row is predicted by the members of the cluster whose centre is
nearest to it: the nearest-neighbour contexts of TabDPT and LoCalPFN, with one
cache per cluster of test rows so that a prediction costs what a subsampled
context costs. The cluster depends on the row alone, so a prediction does not
depend on the other rows of the batch. A regressor's members read their context's
targets standardised on that context, as the checkpoint was pretrained.

Examples
--------
>>> import numpy as np
>>> X = np.concatenate([np.zeros((50, 2)), np.full((50, 2), 10.0)])
>>> retrieval, contexts = fit_retrieval(X, np.arange(100), 50, np.random.default_rng(0))
>>> len(contexts), sorted(len(rows) for rows in contexts)
(2, [50, 50])
>>> retrieval.assign(np.array([[0.5, 0.0], [9.0, 11.0]])) == retrieval.assign(X[[0, 99]])
array([ True,  True])
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import pairwise_distances_argmin
from sklearn.metrics.pairwise import euclidean_distances

MAX_CLUSTERS = 8  # contexts cached per member; each adds its keys and values to memory
# What the "auto" sizes resolve to with retrieval: 4 members of 1,024 rows per cluster (32
# cached contexts at most), so that a test row costs a quarter of 8 members of 2,048 rows.
RETRIEVAL_MEMBERS = 4
RETRIEVAL_CONTEXT_ROWS = 1024


@dataclass
class Retrieval:
    """Where a row's context comes from: the nearest cluster centre (all numpy).

    Attributes
    ----------
    mean, scale : ndarray of shape (n_features,)
        Z-scoring of the encoded features, from the rows clustered.
    centres : ndarray of shape (n_clusters, n_features)
        Cluster centres in the z-scored space.
    """

    mean: np.ndarray
    scale: np.ndarray
    centres: np.ndarray

    def space(self, X_enc: np.ndarray) -> np.ndarray:
        """Z-scored features of encoded rows, missing values at the mean (0)."""
        return np.nan_to_num((X_enc - self.mean) / self.scale)

    def assign(self, X_enc: np.ndarray) -> np.ndarray:
        """Cluster of each encoded row, shape (n,): the nearest centre."""
        return pairwise_distances_argmin(self.space(X_enc), self.centres)


def fit_retrieval(X_enc: np.ndarray, pool: np.ndarray, n_rows: int,
                  rng: np.random.Generator) -> tuple[Retrieval, list[np.ndarray]]:
    """Cluster the rows ``pool`` of ``X_enc`` and pick every cluster's context.

    Parameters
    ----------
    X_enc : ndarray of shape (n_samples, n_features)
        The encoded table.
    pool : ndarray of int
        The rows that may be read as context (more than ``n_rows``).
    n_rows : int
        Rows of each context.
    rng : numpy Generator
        Seeds k-means.

    Returns
    -------
    retrieval : Retrieval
    contexts : list of ndarray
        Per cluster, the ``n_rows`` rows of ``pool`` nearest to its centre, sorted.
    """
    X_pool = X_enc[pool]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-missing columns
        mean = np.nan_to_num(np.nanmean(X_pool, axis=0))
        scale = np.nan_to_num(np.nanstd(X_pool, axis=0))
    unclustered = Retrieval(mean, np.where(scale > 1e-12, scale, 1.0), np.empty((0, len(mean))))
    z = unclustered.space(X_pool)
    n_clusters = min(MAX_CLUSTERS, math.ceil(len(pool) / n_rows))
    kmeans = KMeans(n_clusters, n_init=1, random_state=int(rng.integers(2**31 - 1))).fit(z)
    retrieval = replace(unclustered, centres=kmeans.cluster_centers_)
    distances = euclidean_distances(retrieval.centres, z)  # (n_clusters, n_pool)
    nearest = np.argpartition(distances, n_rows - 1, axis=1)[:, :n_rows]
    return retrieval, [np.sort(pool[rows]) for rows in nearest]
