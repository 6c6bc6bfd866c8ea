"""
Forecasting with TimePEFTForecaster
===================================

:class:`~skfm.TimePEFTForecaster` forecasts a *combination* of classical forecasters fitted by
sktime (the mean of the two of AutoETS, Theta, a ridge on the lags, the seasonal naive and the
naive forecast that forecast the end of the training series best, at a few rolling origins)
plus a *correction* learned by small adapters fine-tuned on a frozen pretrained transformer
(LoRA on the attention projections, a frequency adapter, a channel adapter and a linear head
that starts at zero). It detects the seasonal period, fine-tunes only where the complexity of
the series advises it, and keeps the correction only where it beats the combination clearly at
those origins. Its prediction intervals come from the errors there. It is an sktime
forecaster, so ``fit(y, fh=...)`` / ``predict()`` / ``predict_interval()`` work as for any
other.

This example forecasts the last 24 months of sktime's Airline series (monthly passengers,
1949-1960, log scale) at the forecaster's defaults, against a seasonal naive forecast, and
prints what the forecaster chose.
"""

# %%
# Data: the Airline series, shipped with sktime, on a log scale.
import matplotlib.pyplot as plt
import numpy as np
from sktime.datasets import load_airline
from sktime.forecasting.naive import NaiveForecaster

from skfm import TimePEFTForecaster

y = np.log(load_airline())
y_train, y_test = y.iloc[:-24], y.iloc[-24:]
fh = np.arange(1, 25)

# %%
# Fit at the defaults (a few seconds on a CPU) and forecast two years, with 80% intervals.
forecaster = TimePEFTForecaster(random_state=0)
forecast = forecaster.fit(y_train, fh=fh).predict()
interval = forecaster.predict_interval(coverage=0.8)
naive = NaiveForecaster(strategy="last", sp=12).fit(y_train).predict(fh)
for name, pred in {"TimePEFTForecaster": forecast, "seasonal naive": naive}.items():
    print(f"{name:<20} MAE (log passengers): {np.mean(np.abs(pred - y_test)):.4f}")
print(f"seasonal period {forecaster.sp_}, lookback {forecaster.context_length_}, "
      f"fine-tuned: {forecaster.finetuned_}, kept: {forecaster.selected_}, "
      f"averaged: {forecaster.combination_weights_}")
print("MSE at the rolling origins:", {k: round(v, 4) for k, v in forecaster.validation_scores_.items()})
print("complexity:", "; ".join(forecaster.complexity_.reasons))

# %%
# The forecast with its history and its 80% interval.
fig, ax = plt.subplots(figsize=(9, 3.6))
ax.plot(y_train.index.to_timestamp(), y_train, color="k", lw=1, label="history")
ax.plot(y_test.index.to_timestamp(), y_test, color="k", lw=1, ls=":", label="actual")
ax.fill_between(interval.index.to_timestamp(), interval.iloc[:, 0], interval.iloc[:, 1],
                color="tab:orange", alpha=0.25, label="80% interval")
ax.plot(forecast.index.to_timestamp(), forecast, color="tab:orange", lw=2,
        label="TimePEFTForecaster")
ax.plot(naive.index.to_timestamp(), naive, color="tab:gray", lw=1, label="seasonal naive")
ax.set_ylabel("log passengers")
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()
