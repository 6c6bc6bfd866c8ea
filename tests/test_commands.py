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


def test_info_prints_one_readable_row_per_checkpoint(capsys):
    from skfm._weights import list_checkpoints

    _commands.print_info()
    out = capsys.readouterr().out
    assert "None" not in out and "{" not in out  # no missing values or raw dicts
    lines = out.splitlines()
    (header,) = [line for line in lines if line.startswith("checkpoint")]
    assert header.split() == ["checkpoint", "family", "parameters", "steps", "sha256",
                              "evaluation"]
    for card in (card for card in list_checkpoints() if card["location"] == "shipped"):
        (row,) = [line for line in lines if line.split()[:1] == [card["name"]]]
        assert card["sha256"][:12] in row and f"{card['training']['steps']:,}" in row
    (tabswift,) = [line for line in lines if line.startswith("tabswift-v3 ")]
    assert "911,586" in tabswift and "mean_roc_auc: tabswift 0.893" in tabswift


def test_a_checkpoint_without_a_card_is_listed_with_question_marks():
    row = _commands._checkpoint_row({"name": "no-such-checkpoint", "location": "cache"})
    assert row == ("no-such-checkpoint (cache)", "?", "unreadable", "?", "?", "-")


def test_the_evaluation_summary_puts_the_own_model_first_and_fits_one_line():
    card = {"model": "mantis", "evaluation": {
        "note": "text", "mean_accuracy": {"rf": 0.8, "mantis": 0.9}, "mean_other": {"x": 1.0}}}
    assert _commands._evaluation_summary(card) == "mean_accuracy: mantis 0.900, rf 0.800"
    long = _commands._evaluation_summary(card, width=20)
    assert long == "mean_accuracy: ma..." and len(long) == 20
    assert _commands._evaluation_summary({"evaluation": {"gate": True}}) == "-"
