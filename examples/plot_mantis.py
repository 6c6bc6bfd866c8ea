"""
Time-series classification with MantisTimeSeriesClassifier
==========================================================

:class:`~skfm.timeseries.MantisTimeSeriesClassifier` embeds every series with a small
transformer pretrained (contrastively, on synthetic series only) to give the same embedding to
two crops of one series. By default the embeddings add to MiniRocket (late fusion): MiniRocket's
features with a ridge classifier and the embeddings with a logistic regression each give
temperature-scaled probabilities, which are multiplied, Mantis's weight (0 to one half) chosen by
out-of-fold log loss on the training set. The transformer is not trained on the user's data.

This example classifies GunPoint (a UCR dataset shipped with sktime: hand trajectories of an
actor drawing a gun or pointing, 50 training series) and projects the embeddings of the test
series on their first two principal components, next to the same projection of the raw series.
"""

# %%
# Data: the official GunPoint split, loaded offline from the sktime wheel.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sktime.datasets import load_gunpoint

from skfm.timeseries import MantisTimeSeriesClassifier

X_train, y_train = load_gunpoint(split="train", return_type="numpy3D")
X_test, y_test = load_gunpoint(split="test", return_type="numpy3D")
print(f"train {X_train.shape}, test {X_test.shape}, classes {np.unique(y_train)}")

# %%
# The default (late fusion of Mantis and MiniRocket), Mantis alone (frozen embeddings and a
# logistic-regression head, ``fusion=None``), and the same head on the raw series. The default
# says which weight Mantis got and the out-of-fold log loss at every weight tried: where
# MiniRocket + ridge is already perfect out of fold, as on GunPoint, the losses tie near 0 and
# the smallest weight, 0, is kept (the default then predicts as MiniRocket + ridge).
default = MantisTimeSeriesClassifier(random_state=0).fit(X_train, y_train)
mantis = MantisTimeSeriesClassifier(fusion=None, random_state=0).fit(X_train, y_train)
raw = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
raw.fit(X_train[:, 0], y_train)
print(f"default accuracy:         {default.score(X_test, y_test):.3f}")
losses = ", ".join(f"{abs(loss):.3f}" for loss in default.head_.losses_)  # abs: no "-0.000"
print(f"  Mantis's weight: {default.fusion_weight_}, out-of-fold log loss at 0, 0.1, ..., 0.5: "
      f"{losses}")
print(f"Mantis alone accuracy:    {mantis.score(X_test, y_test):.3f}")
print(f"raw-series LR accuracy:   {raw.score(X_test[:, 0], y_test):.3f}")

# %%
# Where the classes lie: PCA of the standardised embeddings (``transform`` of Mantis alone) and
# of the raw series.
Z = StandardScaler().fit_transform(mantis.transform(X_test))
panels = {
    "Mantis embeddings": PCA(2).fit_transform(Z),
    "raw series": PCA(2).fit_transform(StandardScaler().fit_transform(X_test[:, 0])),
}
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
for label in np.unique(y_test):
    rows = y_test == label
    axes[0].plot(X_test[rows, 0].T[:, :10], lw=0.7, color=f"C{int(label) - 1}")
    for ax, points in zip(axes[1:], panels.values(), strict=True):
        ax.scatter(*points[rows].T, s=10, color=f"C{int(label) - 1}", label=f"class {label}")
axes[0].set_title("ten test series per class")
for ax, title in zip(axes[1:], panels, strict=True):
    ax.set_title(f"PCA of {title}")
axes[2].legend()
fig.tight_layout()
plt.show()
