"""JAX under a cap: total seen, its own OOM error past the cap, a fixed workload.

With default preallocation XLA takes 75 % of what cuMemGetInfo reports as
total, so under vramctl it preallocates 75 % of the cap."""
import common
import jax
import jax.numpy as jnp

a = common.args()
d = jax.devices("gpu")[0]
stats = d.memory_stats() or {}
# What XLA's allocator will use (75 % of the total by default); with the
# platform allocator there may be no limit, so the driver's total stands in.
limit = stats.get("bytes_limit", 0)
seen = limit or common.driver_total()


def work():
    x = jax.random.normal(jax.random.PRNGKey(0), (2048, 2048))
    for _ in range(20):
        x = jnp.tanh(x @ x)
    x.block_until_ready()


oom = continued = False
if a.cap:
    try:
        big = jnp.zeros((a.cap + 64 * common.MiB,), dtype=jnp.uint8)
        big.block_until_ready()
    except Exception as e:  # jaxlib's XlaRuntimeError: RESOURCE_EXHAUSTED
        oom = "RESOURCE_EXHAUSTED" in str(e) or "Out of memory" in str(e)
    try:
        small = jnp.ones((16 * common.MiB,), dtype=jnp.uint8)
        continued = int(small.sum()) == 16 * common.MiB
    except Exception:
        continued = False
# bytes_limit is the allocator's own limit (75 % of total by default).
note = "(XLA bytes_limit) " if limit else "(driver total) "
common.report(a.cap, seen, oom, continued, common.timed(work), note=note)
