"""Data-parallel pretraining: ``skfm pretrain`` under torchrun, 2 gloo processes on the CPU."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed

from skfm.pretrain._distributed import World, process_group, rank_seed
from skfm.pretrain._loop import resumed_generator_state
from skfm.pretrain.tabswift import load_config, train

pytestmark = pytest.mark.skipif(
    not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
    reason="this torch build has no torch.distributed with the gloo backend",
)

WORKER = Path(__file__).with_name("ddp_pretrain_worker.py")
SEED = 1  # with seed 1 the two ranks draw different tasks at every one of the first 3 steps
STEPS = 3


def _torchrun(record_dir: Path, out: Path, steps: int, *extra: str) -> dict:
    """Run the worker on 2 processes; returns each rank's record (see ddp_pretrain_worker.py)."""
    record_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        str(WORKER), str(record_dir), "pretrain", "tabswift", "--config", "tiny",
        "--steps", str(steps), "--out", str(out), "--device", "cpu", "--threads", "1",
        "--seed", str(SEED), "--save-every", "2", "--eval-every", "2", "--quiet", *extra,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return {rank: torch.load(record_dir / f"rank{rank}.pt", weights_only=True) for rank in (0, 1)}


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    """3 steps on 2 ranks (saves at steps 2 and 3, rank 0 evaluates at both), then export."""
    root = tmp_path_factory.mktemp("ddp")
    export = root / "ddp.safetensors"
    ranks = _torchrun(root / "ranks", root / "run", STEPS, "--export", str(export))
    return {"root": root, "out": root / "run", "export": export, "ranks": ranks}


def _log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def test_ranks_end_with_identical_weights(ddp_run):
    """Both ranks start from the same weights and end bit-identical, after training moved them."""
    rank0, rank1 = ddp_run["ranks"][0], ddp_run["ranks"][1]
    assert torch.equal(rank0["initial"], rank1["initial"])
    assert torch.equal(rank0["final"], rank1["final"])
    assert not torch.equal(rank0["final"], rank0["initial"])
    saved = torch.load(ddp_run["out"] / "state.pt", weights_only=True)["model"]
    assert torch.equal(torch.cat([v.flatten() for v in saved.values()]), rank0["final"])


def test_ranks_draw_different_batches(ddp_run):
    """Every step the ranks trained on different datasets (tasks and sizes differ, losses too)."""
    rank0, rank1 = ddp_run["ranks"][0]["records"], ddp_run["ranks"][1]["records"]
    assert len(rank0) == len(rank1) == STEPS
    assert {r["task"] for r in rank0} == {r["task"] for r in rank1} == {"classification",
                                                                         "regression"}
    for a, b in zip(rank0, rank1, strict=True):
        assert a["task"] != b["task"] and a["loss_final"] != b["loss_final"]


def test_rank_zero_draws_the_one_process_batches(ddp_run, tmp_path):
    """Rank 0's batches are a one-process run's with the same seed (same first-step loss)."""
    train(load_config("tiny"), steps=STEPS, out=tmp_path, device="cpu", seed=SEED,
          progress=False, threads=1)
    single = _log(tmp_path)
    rank0 = ddp_run["ranks"][0]["records"]
    assert [(r["task"], r["rows"]) for r in single] == [(r["task"], r["rows"]) for r in rank0]
    assert single[0]["loss_final"] == rank0[0]["loss_final"]


def test_rank_zero_alone_writes(ddp_run):
    """One log record per step (rank 0's batches); state.pt holds both ranks' generators."""
    records = _log(ddp_run["out"])
    assert [r["step"] for r in records] == [1, 2, 3]
    assert ["eval_ema" in r for r in records] == [False, True, True]
    assert [r["rows"] for r in records] == [r["rows"] for r in ddp_run["ranks"][0]["records"]]
    state = torch.load(ddp_run["out"] / "state.pt", weights_only=True)
    assert (state["step"], state["world_size"], state["backend"]) == (STEPS, 2, "gloo")
    assert len(state["generators"]) == 2
    assert torch.equal(state["generator"], state["generators"][0])
    assert not torch.equal(state["generators"][0], state["generators"][1])


def test_card_records_the_processes(ddp_run):
    """The card counts the datasets of both ranks and records the torchrun command."""
    card = json.loads(ddp_run["export"].with_suffix(".json").read_text())
    training = card["training"]
    assert (training["world_size"], training["backend"]) == (2, "gloo")
    assert training["datasets_seen"] == STEPS * 2 * load_config("tiny")["optim"]["batch_size"]
    assert "2 processes on cpu (gloo), 1 threads each" in training["hardware"]
    assert card["command"].startswith("torchrun --nproc_per_node 2 --no-python skfm pretrain")


@pytest.mark.slow
def test_resumed_run_ends_as_the_uninterrupted_one(ddp_run, tmp_path):
    """Interrupted at step 2 and resumed on 2 ranks: the weights and batches of the 3-step run."""
    out = tmp_path / "run"
    _torchrun(tmp_path / "first", out, 2)
    resumed = _torchrun(tmp_path / "second", out, STEPS)
    for rank in (0, 1):
        straight = ddp_run["ranks"][rank]
        assert torch.equal(resumed[rank]["final"], straight["final"])
        assert resumed[rank]["records"] == straight["records"][2:]
    def without_time(records):
        return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in records]

    assert without_time(_log(out)) == without_time(_log(ddp_run["out"]))


def test_world_from_torchrun_environment():
    """WORLD_SIZE, RANK, LOCAL_RANK and LOCAL_WORLD_SIZE; one process without them."""
    assert World.from_env({}) == World(size=1, rank=0, local_rank=0, local_size=1)
    env = {"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    world = World.from_env(env)
    assert (world.size, world.rank, world.local_rank, world.distributed, world.is_main) == (
        4, 3, 1, True, False)
    assert world.launcher() == "torchrun --nproc_per_node 2 --nnodes 2 --no-python "
    assert World().launcher() == ""


def test_rank_seeds():
    """Rank 0 keeps the run's seed; other ranks and restarts get distinct derived seeds."""
    assert rank_seed(5, 0) == 5
    seeds = {rank_seed(5, rank, step) for rank in range(4) for step in (0, 10)}
    assert len(seeds) == 8
    assert rank_seed(5, 1) == rank_seed(5, 1) != rank_seed(6, 1)


def test_resumed_generator_state_per_rank(caplog):
    """Each rank takes its saved state; a rank the saving run lacked gets a fresh derived seed."""
    states = [torch.Generator().manual_seed(s).get_state() for s in (10, 11)]
    two_ranks = {"generator": states[0], "generators": states, "step": 7}
    assert torch.equal(resumed_generator_state(two_ranks, World(size=2, rank=1), 0), states[1])
    one_process = {"generator": states[0], "step": 7}
    assert torch.equal(resumed_generator_state(one_process, World(), 0), states[0])
    assert not caplog.records
    with caplog.at_level(logging.WARNING):
        resumed_generator_state(two_ranks, World(size=3, rank=0), 0)
    assert "written by 2 process(es), resumed by 3" in caplog.text
    fresh = resumed_generator_state(two_ranks, World(size=3, rank=2), 0)
    assert torch.equal(fresh, torch.Generator().manual_seed(rank_seed(0, 2, 7)).get_state())


def test_process_group_only_on_cpu_or_cuda():
    """Several processes on MPS (no collective backend) are refused before joining a group."""
    with pytest.raises(ValueError, match="runs on 'cpu' or 'cuda', not 'mps'"):
        with process_group(World(size=2), torch.device("mps")):
            pass
    with process_group(World(), torch.device("cpu")) as backend:  # one process: no group
        assert backend is None and not torch.distributed.is_initialized()
