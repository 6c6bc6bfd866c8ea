"""Strategic classification: agents' best response and SPNClassifier.

After a classifier is deployed, each individual whose prediction is unfavourable moves their
features to the cheapest point the classifier labels favourable, provided that point costs at
most ``budget``; labels do not change (gaming, not improvement; Hardt et al., 2016).
:func:`best_response` simulates that move for any fitted classifier: in closed form for binary
linear models, by a black-box search on ``predict_proba`` otherwise.

:class:`SPNClassifier` (after SPN, "strategic prior-data fitted network", ICML 2026 - a
reconstruction, the paper's code is not public) adapts an in-context learner at inference time,
without retraining the model: it replaces the context by *strategic* in-context examples - the
context rows moved as they would best-respond to the deployed classifier, labels kept - and
repeats that a few times towards a fixed point between the classifier and the agents' response.

A move's cost is ``"l2"``, ``"quadratic"`` or ``"linear"`` in the features, each weighted by
its price (:mod:`~skfm.tabular.strategic.costs`); immutable features (those not in
``manipulable``) never move.

The modules: :mod:`~skfm.tabular.strategic.costs` (what a move costs),
:mod:`~skfm.tabular.strategic.search` (the closed-form and black-box searches for the cheapest
favourable move), :mod:`~skfm.tabular.strategic.response` (:func:`best_response`) and
:mod:`~skfm.tabular.strategic.classifier` (:class:`SPNClassifier`).
"""

from skfm.tabular.strategic.classifier import SPNClassifier
from skfm.tabular.strategic.costs import COSTS
from skfm.tabular.strategic.response import best_response

__all__ = ["COSTS", "SPNClassifier", "best_response"]
