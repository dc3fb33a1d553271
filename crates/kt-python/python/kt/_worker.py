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
    """The worker's command line: this interpreter loading kt's compiled module from its file and serving.

    It loads the extension alone (``-S``, no ``import kt``): importing the package would import numpy and the
    rest of ``kt`` first, about half a second before the worker could create its CUDA context, on every call
    (the compiled module needs none of it)."""
    from . import _kt

    code = (
        "import importlib.util as u; "
        f"s = u.spec_from_file_location('kt._kt', {_kt.__file__!r}); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); m.tuner_worker()"
    )
    return [sys.executable, "-S", "-c", code]


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


def tuner_cache_dir():
    """kt's own tuner cache, shared with `kt tune`: compiled modules and device facts such as the measured copy
    bandwidth, so a second call does not compile or measure them again. (Kernel Tuner's `cache` is the
    results file and stays separate.)"""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kt", "tuner")
