"""Holds what a framework takes of the card under a cap, for bench/gpu/card.sh.

    card_case.py torch|jax|cupy

Takes 90% of what the framework is told is free (JAX: its own
preallocation, plus 90% of what it then says is free), prints
"ready ALLOCATED_BYTES", and holds it until stdin closes. What the card
holds for the process is read outside it (nvidia-smi); the difference is
the framework's context and the driver's own use.
"""
import sys

MiB = 1024 * 1024
which = sys.argv[1]
held = []
allocated = 0

if which == "torch":
    import torch

    free, _ = torch.cuda.mem_get_info(0)
    n = int(free * 0.9)
    held.append(torch.empty(n, dtype=torch.uint8, device="cuda:0"))
    allocated = torch.cuda.memory_reserved(0)
elif which == "jax":
    import jax
    import jax.numpy as jnp

    d = jax.devices()[0]
    stats = d.memory_stats() or {}
    limit = stats.get("bytes_limit", 0)
    n = int(limit * 0.9) // 4
    held.append(jnp.zeros((n,), dtype=jnp.float32).block_until_ready())
    stats = d.memory_stats() or {}
    allocated = stats.get("bytes_reserved", stats.get("bytes_in_use", 0)) or limit
elif which == "cupy":
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    n = int(free * 0.9)
    held.append(cupy.empty((n,), dtype=cupy.uint8))
    allocated = cupy.get_default_memory_pool().total_bytes()
else:
    sys.exit(f"unknown framework {which}")

print(f"ready {allocated}", flush=True)
sys.stdin.read()
