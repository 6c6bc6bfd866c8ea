"""Time-series foundation models: Mantis classification.

``MantisSktimeClassifier`` (the sktime adapter) is imported on first access,
so that importing skfm does not import sktime.
"""

from skfm.timeseries.mantis import MantisTimeSeriesClassifier

__all__ = ["MantisSktimeClassifier", "MantisTimeSeriesClassifier"]


def __getattr__(name: str):
    if name == "MantisSktimeClassifier":
        from skfm.timeseries.mantis.sktime import MantisSktimeClassifier

        return MantisSktimeClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
