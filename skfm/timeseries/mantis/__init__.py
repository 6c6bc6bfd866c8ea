"""Mantis: a time-series classification foundation model pretrained on synthetic series."""

from skfm.timeseries.mantis.classifier import MantisTimeSeriesClassifier
from skfm.timeseries.mantis.transformer import MantisTransformer

__all__ = ["MantisTimeSeriesClassifier", "MantisTransformer"]
