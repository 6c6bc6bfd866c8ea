"""The shared early-stopping fine-tuning loop (skfm._finetune) and seeded blocks."""

import numpy as np
import pytest
import torch
from torch import nn

from skfm._backend import seeded
from skfm._finetune import FineTuneConfig, fine_tune, minibatches, param_groups

X = torch.linspace(-1, 1, 40)[:, None]
Y = 3 * X


def _config(**kwargs):
    return FineTuneConfig(**{"max_epochs": 20, "batch_size": 8, "n_iter_no_change": 2,
                             "tol": 1e-6, "weight_decay": 0.0, **kwargs})


def _run(net, validation=True, **kwargs):
    return fine_tune(
        net, param_groups(list(net.parameters()), kwargs.pop("lr", 0.1)), np.arange(30),
        lambda rows: ((net(X[rows]) - Y[rows]) ** 2).mean(),
        (lambda: ((net(X[30:]) - Y[30:]) ** 2).mean()) if validation else None,
        _config(**kwargs), torch.Generator().manual_seed(0))


@pytest.mark.parametrize(("n", "size", "minimum", "expected"), [
    (5, 2, 1, [2, 2, 1]),
    (5, 2, 2, [2, 3]),
    (1, 4, 2, []),
    (3, 1, 2, [2]),  # one-row batches: only the joined last pair is kept
    (0, 4, 1, []),
])
def test_minibatches(n, size, minimum, expected):
    batches = minibatches(np.arange(n), size, minimum)
    assert [len(b) for b in batches] == expected
    if minimum == 1:
        np.testing.assert_array_equal(np.concatenate([np.arange(0), *batches]), np.arange(n))


def test_param_groups_leave_out_an_empty_backbone():
    head, body = nn.Linear(2, 1), nn.Linear(2, 2)
    assert len(param_groups(list(head.parameters()), 1e-2, [], 1e-4)) == 1
    groups = param_groups(list(head.parameters()), 1e-2, list(body.parameters()), 1e-4)
    assert [g["lr"] for g in groups] == [1e-2, 1e-4]
    assert [len(g["params"]) for g in groups] == [2, 2]


def test_same_seed_same_bits_and_the_best_state_is_kept():
    """Two runs from the same seed agree bit for bit; the network ends at the state of the best
    validation loss, which the result reports, even when later epochs were worse."""
    runs = []
    for _ in range(2):
        with seeded(0):
            net = nn.Sequential(nn.Linear(1, 8), nn.Dropout(0.2), nn.Linear(8, 1))
            result = _run(net, lr=0.5, max_epochs=30, n_iter_no_change=3)
        runs.append((net, result))
    (a, ra), (b, rb) = runs
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert ra.n_epochs == rb.n_epochs and ra.validation_loss == rb.validation_loss
    a.eval()
    with torch.no_grad():
        assert float(((a(X[30:]) - Y[30:]) ** 2).mean()) == pytest.approx(ra.validation_loss)


def test_patience_stops_early_and_no_validation_runs_every_epoch():
    with seeded(0):
        net = nn.Linear(1, 1)
    stopped = _run(net, lr=0.0, n_iter_no_change=2)  # no change: epochs 2 and 3 are stale
    assert stopped.n_epochs == 3 and stopped.validation_loss is not None
    plain = _run(nn.Linear(1, 1), validation=False, max_epochs=4)
    assert plain.n_epochs == 4 and plain.validation_loss is None


def test_step_schedule_and_clipping():
    net = nn.Linear(1, 1)
    groups = param_groups(list(net.parameters()), 0.1)
    fine_tune(net, groups, np.arange(30), lambda rows: ((net(X[rows]) - Y[rows]) ** 2).mean(),
              None, _config(max_epochs=4, step_lr=(2, 0.5), clip_grad_norm=1e-3),
              torch.Generator().manual_seed(0))
    assert groups[0]["lr"] == pytest.approx(0.025)


def test_seeded_restores_the_callers_random_state():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    with seeded(0):
        inside = torch.rand(3)
    assert torch.equal(torch.rand(3), expected)
    with seeded(0):
        assert torch.equal(torch.rand(3), inside)


def test_time_budget_ends_training_after_the_step_that_runs_out():
    """With no time left the first step is the last; its epoch is still validated."""
    with seeded(0):
        net = nn.Linear(1, 1)
    result = _run(net, time_budget=0.0, max_epochs=50, n_iter_no_change=50)
    assert result.out_of_time and result.n_epochs == 1 and result.validation_loss is not None
    assert not _run(nn.Linear(1, 1), max_epochs=2).out_of_time


def test_validate_start_keeps_a_starting_state_no_epoch_beats():
    """A network that starts at the solution: weight decay only pulls it away, so with
    ``validate_start`` it ends exactly where it began; without it, at the best epoch's state."""
    def perfect():
        net = nn.Linear(1, 1)
        with torch.no_grad():
            net.weight.fill_(3.0)
            net.bias.zero_()
        return net

    kept, moved = perfect(), perfect()
    result = _run(kept, lr=0.05, weight_decay=1.0, validate_start=True)
    assert kept.weight.item() == 3.0 and result.validation_loss == 0.0
    _run(moved, lr=0.05, weight_decay=1.0)
    assert moved.weight.item() != 3.0
