"""Time-PEFT forecasting: a small patch-transformer backbone, adapters, complexity diagnostics.

``TimePEFTForecaster`` (an sktime forecaster) is imported on first access, so
that importing skfm does not import sktime.
"""

from skfm.timeseries.forecasting.complexity import (
    ComplexityReport,
    finetuning_advisable,
    multichannel_complexity,
    spectral_entropy,
    temporal_complexity,
    transfer_entropy,
)

__all__ = [
    "ComplexityReport",
    "TimePEFTForecaster",
    "finetuning_advisable",
    "multichannel_complexity",
    "spectral_entropy",
    "temporal_complexity",
    "transfer_entropy",
]


def __getattr__(name: str):
    if name == "TimePEFTForecaster":
        from skfm.timeseries.forecasting.forecaster import TimePEFTForecaster

        return TimePEFTForecaster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
