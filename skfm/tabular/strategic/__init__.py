"""Strategic classification: agents' best response and SPNClassifier.

After a classifier is deployed, each individual whose prediction is unfavourable moves their
features to the cheapest point the classifier labels favourable, provided that point costs at
most ``budget``; labels do not change (gaming, not improvement; Hardt et al., 2016).
:func:`best_response` simulates that move for any fitted classifier: in closed form for binary
linear models, by a black-box search on ``predict_proba`` otherwise.

:class:`SPNClassifier` (after SPN, "strategic prior-data fitted network", ICML 2026 - a
reconstruction, the paper's code is not public) keeps an in-context learner accurate when people
game it, without retraining the model. By default it is the leader of the Stackelberg game: it
deploys a rule "favourable iff a base model's favourable log-odds exceed t" whose threshold t
anticipates the rows' answer, so rows that game SPN itself are read as they were before moving.
The base is TabSwift (t right on the most held-out context rows after they answered the rule)
or a logistic regression (t what the budget buys: the strategic-robust linear classifier),
whichever is more accurate on held-out context rows that game it, the logistic regression
unless TabSwift's rule is better fold by fold by more than two corrected standard errors. With ``method="context"``
(people game the base model instead) it replaces the context by *strategic* in-context
examples - the context rows moved as they would answer the base model, labels kept.

A move's cost is ``"l2"``, ``"quadratic"`` or ``"linear"`` in the features, each weighted by
its price (:mod:`~skfm.tabular.strategic.costs`); immutable features (those not in
``manipulable``) never move.

The modules: :mod:`~skfm.tabular.strategic.costs` (what a move costs),
:mod:`~skfm.tabular.strategic.search` (the closed-form and black-box searches for the cheapest
favourable move), :mod:`~skfm.tabular.strategic.response` (:func:`best_response` and the
highest score a row can reach) and
:mod:`~skfm.tabular.strategic.classifier` (:class:`SPNClassifier`).
"""

from skfm.tabular.strategic.classifier import SPNClassifier
from skfm.tabular.strategic.costs import COSTS
from skfm.tabular.strategic.response import best_response

__all__ = ["COSTS", "SPNClassifier", "best_response"]
