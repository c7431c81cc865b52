"""A fresh process can load a solve from JAX's persistent compilation cache.

The cache is opt-in (``SIMKIT_COMPILATION_CACHE=1`` here, or ``simkit.configure(
compilation_cache=True)``; simkit/_config.py). A fresh process loads a program only if it
has no host callbacks (equinox's runtime checks are callbacks; inside simkit's calls they
substitute NaN, and failures travel as result codes).
"""

import os
import subprocess
import sys

SCRIPT = """
import jax.monitoring, simkit
from simkit import models
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
sol = simkit.solve(models.get("lorenz"), (0.0, 1.0), saveat=11)
print("STATUS", int(sol.status))
print("CACHE_HITS", sum("cache_hits" in e for e in events))
"""


def _run(cache_dir):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "EQX_ON_ERROR")}
    env.update(SIMKIT_CACHE_DIR=str(cache_dir), SIMKIT_COMPILATION_CACHE="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "STATUS 0" in out.stdout
    hits = int(out.stdout.split("CACHE_HITS")[1].split()[0])
    return out.stderr, hits


def test_second_process_hits_the_persistent_cache(tmp_path):
    log, hits = _run(tmp_path)
    assert hits == 0 and "host callbacks" not in log
    assert any(tmp_path.iterdir()), "nothing was written to the compilation cache"
    _, hits = _run(tmp_path)
    assert hits >= 1
