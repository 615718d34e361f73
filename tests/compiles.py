"""What Numba compiles in a fresh process: for tests whose point is that a first use compiles nothing."""

from __future__ import annotations

import os
import subprocess
import sys

LISTEN = '''
from numba.core import event


class _Names(event.Listener):
    def on_start(self, ev):
        print(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass


def listen():
    event.register("numba:compile", _Names())
'''


def compiled(script: str, cache_dir: object) -> list[str]:
    """The functions Numba compiles once ``script`` calls ``listen()``, run in a fresh process on the kernel cache
    ``cache_dir`` (an empty one: nothing is loaded)."""
    env = {**os.environ, "TAPE_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", LISTEN + script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()
