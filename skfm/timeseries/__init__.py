"""Time-series foundation models: Mantis classification and embeddings.

``MantisSktimeClassifier`` and ``MantisSktimeTransformer`` (the sktime adapters) are
imported on first access, so that importing skfm does not import sktime.
"""

from skfm.timeseries.mantis import MantisTimeSeriesClassifier, MantisTransformer

__all__ = [
    "MantisSktimeClassifier",
    "MantisSktimeTransformer",
    "MantisTimeSeriesClassifier",
    "MantisTransformer",
]

#: The sktime adapters, imported on first access.
_SKTIME_ADAPTERS = ("MantisSktimeClassifier", "MantisSktimeTransformer")


def __getattr__(name: str):
    if name in _SKTIME_ADAPTERS:
        from skfm.timeseries.mantis import sktime

        return getattr(sktime, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
