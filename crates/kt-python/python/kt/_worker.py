"""How kt's tuner starts its GPU worker from inside Python.

kt's tuner launches every kernel in a separate worker process (a hang or a fault costs one configuration, not
the caller's process). The ``kt`` command starts itself as the worker; a Python process has no ``kt`` binary,
so the worker is this same interpreter running the compiled module's entry point. The worker gets a scrubbed
environment, so the module's location travels as PYTHONPATH.
"""

import os
import sys

# The fake device of kt's CPU tests (no GPU): set in the caller's environment, passed on to the worker.
FAKE_ENV = "KT_TUNER_FAKE_WORKER"


def worker_command():
    """The worker's command line: this interpreter, importing kt's compiled module and serving."""
    return [sys.executable, "-c", "import kt._kt as m; m.tuner_worker()"]


def _import_paths():
    """Where ``kt`` and what it imports are importable from in this interpreter."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here] + [p for p in sys.path if p and os.path.isdir(p)]
    return list(dict.fromkeys(paths))


def kt_command():
    """kt's command line as this interpreter running kt's module (``kt.transform`` starts the worker and the
    profiled launch with it). The import paths travel in the code, since kt scrubs the worker's environment."""
    code = f"import sys; sys.path[:0] = {_import_paths()!r}; from kt._main import main; main()"
    return [sys.executable, "-c", code]


def worker_env():
    """What the worker's environment needs beyond kt's defaults: where ``kt`` is importable from."""
    env = [("PYTHONPATH", os.pathsep.join(_import_paths()))]
    if os.environ.get(FAKE_ENV):
        env.append((FAKE_ENV, os.environ[FAKE_ENV]))
    return env
