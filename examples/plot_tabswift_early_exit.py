"""
Per-sample early exit in TabSwift
=================================

TabSwift's prediction head is shared by all its layers and was trained to be read after
every one of them, so a row whose prediction has settled does not need the remaining layers.
With ``early_exit=True``, each row leaves after the first layer at which its class
probabilities moved by at most ``1 - agreement`` (total variation) over each of the last two
layers, and keeps that layer's answer. The rule is per row: a row's prediction never depends
on the other rows of the batch. :meth:`~skfm.TabSwiftClassifier.exit_depth` tells how many
layers each row used.

This example classifies handwritten digits (the 8x8 images that ship with scikit-learn, 10
classes), plots the histogram of the depth each test row used at three agreement levels, and
compares their accuracy with full depth.
"""

# %%
# Data: 1797 images of 64 pixels; half are the context, half are predicted.
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from skfm import TabSwiftClassifier

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                                    random_state=0)

# %%
# One fit; ``early_exit`` only changes how ``predict`` runs, so it is switched with
# ``set_params`` on the fitted model. Depths are averaged over the ensemble members.
clf = TabSwiftClassifier(n_estimators=2, random_state=0).fit(X_train, y_train)
n_layers = int(clf.exit_depth(X_test[:1])[0])
settings = {"full depth": False, "early_exit=0.9": 0.9, "early_exit=True (0.75)": True,
            "early_exit=0.6": 0.6}
depth, accuracy = {}, {}
for name, early_exit in settings.items():
    clf.set_params(early_exit=early_exit)
    start = time.perf_counter()
    accuracy[name] = clf.score(X_test, y_test)
    seconds = time.perf_counter() - start
    depth[name] = clf.exit_depth(X_test)
    print(f"{name:>22}: accuracy {accuracy[name]:.3f}, mean depth "
          f"{depth[name].mean():.2f} of {n_layers} layers, predict {seconds:.2f} s")

# %%
# Most rows leave well before the last layer; the hard ones (here, digits that look alike)
# use the whole model. A looser agreement saves more depth and costs a little accuracy.
fig, ax = plt.subplots(figsize=(6.5, 3.8))
bins = np.arange(0.75, n_layers + 0.5, 0.5)
names = [name for name in settings if name != "full depth"]
counts, _, _ = ax.hist(
    [depth[name] for name in names], bins=bins,
    label=[f"{name}: acc {accuracy[name]:.3f}, mean depth {depth[name].mean():.1f}"
           for name in names])
ax.axvline(n_layers, color="k", ls=":", lw=1,
           label=f"full depth: acc {accuracy['full depth']:.3f}")
ax.set_xlabel("layers used (mean over the 2 ensemble members)")
ax.set_ylabel("test rows")
ax.set_title("Early-exit depth on digits (10 classes)")
ax.set_ylim(0, 1.5 * max(c.max() for c in counts))  # room for the legend
ax.legend(fontsize=7.5, loc="upper left")
fig.tight_layout()
plt.show()
