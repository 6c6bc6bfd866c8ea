"""
Forecasting with TimePEFTForecaster
===================================

:class:`~skfm.TimePEFTForecaster` forecasts with a small transformer pretrained (masked patch
reconstruction and forecasting, on synthetic series only) and kept frozen; only small adapters are fine-tuned
on the series given to ``fit``: LoRA on the attention projections, a frequency adapter (top-k
filtering along the patches), a channel adapter (shared down-, per-channel up-projection) and a
linear forecasting head. It is an sktime forecaster, so ``fit(y, fh=...)`` / ``predict()``
work as for any other.

This example forecasts the last 24 months of sktime's Airline series (monthly passengers,
1949-1960, log scale) from a 48-month lookback, against a seasonal naive forecast, and prints
the complexity diagnostics the forecaster computed on the training series.
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
# Fine-tune the Time-PEFT adapters (a few seconds on a CPU) and forecast two years.
forecaster = TimePEFTForecaster(context_length=48, max_epochs=30, learning_rate=3e-3,
                                validation_fraction=0.15, random_state=0)
forecast = forecaster.fit(y_train, fh=fh).predict()
naive = NaiveForecaster(strategy="last", sp=12).fit(y_train).predict(fh)
for name, pred in {"TimePEFTForecaster": forecast, "seasonal naive": naive}.items():
    print(f"{name:<20} MAE (log passengers): {np.mean(np.abs(pred - y_test)):.4f}")
print(f"trainable parameters: {forecaster.n_trainable_params_:,} "
      f"(frozen backbone: {forecaster.n_backbone_params_:,}), epochs: {forecaster.n_epochs_}")
print("complexity:", "; ".join(forecaster.complexity_.reasons))

# %%
# The forecast with its history.
fig, ax = plt.subplots(figsize=(9, 3.6))
ax.plot(y_train.index.to_timestamp(), y_train, color="k", lw=1, label="history")
ax.plot(y_test.index.to_timestamp(), y_test, color="k", lw=1, ls=":", label="actual")
ax.plot(forecast.index.to_timestamp(), forecast, color="tab:orange", lw=2,
        label="TimePEFTForecaster")
ax.plot(naive.index.to_timestamp(), naive, color="tab:gray", lw=1, label="seasonal naive")
ax.set_ylabel("log passengers")
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()
