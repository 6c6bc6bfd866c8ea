"""What ``skfm info`` prints and how ``skfm demo`` draws its scores."""

import numpy as np

from skfm import _commands


def _drawn_axes(monkeypatch, rows):
    """The axes ``_plot`` draws for ``rows``, kept open instead of being saved."""
    figures = []
    monkeypatch.setattr(_commands, "_save", lambda fig, path: figures.append(fig))
    _commands._plot(rows, "unused.png")
    (figure,) = figures
    return figure.axes


def _row(dataset, model, score, task="regression"):
    return {"dataset": dataset, "model": model, "score": score, "task": task, "seconds": 0.1}


def test_a_negative_r2_bar_is_drawn_whole(monkeypatch):
    rows = [_row("diabetes", "TabSwiftRegressor", 0.45), _row("diabetes", "Ridge", -0.8),
            _row("iris", "TabSwiftClassifier", 0.97, "classification"),
            _row("iris", "LogisticRegression", 0.93, "classification")]
    negative, positive = _drawn_axes(monkeypatch, rows)
    low, high = negative.get_xlim()
    assert low < -0.8 and high == 1.0
    (bar,) = [patch for patch in negative.patches if patch.get_width() < 0]
    assert bar.get_x() + bar.get_width() == -0.8  # the bar runs from 0 to the score
    np.testing.assert_allclose(positive.get_xlim(), (0.83, 1.0))  # 0.1 below the lowest


def test_score_limits_keep_zero_and_every_score_in_view():
    for scores in ([0.2, 0.9], [-5.0, 0.3], [-0.01, 0.5], [0.0, 1.0]):
        low, high = _commands._score_limits(np.array(scores))
        assert low < min(scores) or min(scores) == low == 0.0  # every bar has room
        assert high == 1.0 and low >= min(scores) - 0.1 * (1 - min(0.0, min(scores))) - 1e-12
