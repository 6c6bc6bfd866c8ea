"""Mantis: a time-series classification foundation model pretrained on synthetic series."""

from skfm.timeseries.mantis.classifier import MantisTimeSeriesClassifier

__all__ = ["MantisTimeSeriesClassifier"]
