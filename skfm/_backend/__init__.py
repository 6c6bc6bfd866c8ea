"""Where and how skfm models run: devices, precision, threads, memory, batching, seeds.

This is the single place in skfm that decides about accelerators; nothing else
calls ``.cuda()``.
"""

from .batching import auto_batch_size, run_in_batches
from .device import (
    as_device,
    available_memory_bytes,
    describe_device,
    resolve_device,
    threads,
    to_device,
)
from .precision import (
    cast_module,
    inference_context,
    output_numpy,
    resolve_precision,
    thread_invariant_attention,
    weights_dtype,
)
from .seeding import draw_seed, seed_everything, seeded, torch_generator

__all__ = [
    "as_device",
    "auto_batch_size",
    "available_memory_bytes",
    "cast_module",
    "describe_device",
    "draw_seed",
    "inference_context",
    "output_numpy",
    "resolve_device",
    "resolve_precision",
    "run_in_batches",
    "seed_everything",
    "seeded",
    "thread_invariant_attention",
    "threads",
    "to_device",
    "torch_generator",
    "weights_dtype",
]
