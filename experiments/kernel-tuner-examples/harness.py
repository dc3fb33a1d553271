"""Runs one Kernel Tuner example script in this process, as its author runs it, and records what the tuner
did: every ``tune_kernel`` and ``run_kernel`` call the script makes (wall time, results, the best
configuration) and how the script ended. ``run.py`` starts it once per script and tool, in a fresh process
and folder, with a timeout.

    python3 harness.py --tool kt|kernel_tuner --script PATH --result PATH [--mode main|pytest]

``--tool`` names the module whose ``tune_kernel`` and ``run_kernel`` are wrapped (``kt`` for a script whose
imports were rewritten, ``kernel_tuner`` for the original). The wrappers only time the call and read what it
returns; the script's own code runs unchanged. Mode ``main`` runs the script as ``__main__`` (``python
script.py``); mode ``pytest`` runs it with pytest (the ``test_*.py`` examples). The result file is rewritten
after every call, so a script stopped by the timeout still leaves the calls it finished.
"""

import argparse
import importlib
import io
import json
import math
import os
import runpy
import sys
import time
import traceback

RESULT = {}
RESULT_PATH = None


def save():
    with open(RESULT_PATH, "w", encoding="utf-8") as f:
        json.dump(RESULT, f, indent=1, default=str)


def plain(value):
    """A parameter value as JSON (numpy numbers as Python numbers)."""
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


def failed(result):
    return "__error__" in result or not isinstance(result.get("time"), (int, float))


def summarise_tuning(name, params, returned, seconds):
    """What one ``tune_kernel`` call returned: the best configuration (``env["best_config"]``, the tool's own
    pick; the lowest ``time`` when env has none) and every configuration's ``time``."""
    results, env = (returned if isinstance(returned, tuple) and len(returned) == 2 else (returned, {}))
    names = list(params)
    measured = {}
    # configurations the tool reports failing, with its reason (kt: `kt_verdict`; Kernel Tuner: `__error__`)
    failures = {}
    for r in results or []:
        key = json.dumps([plain(r.get(n)) for n in names])
        if not failed(r):
            measured[key] = float(r["time"])
        else:
            failures[key] = str(r.get("kt_verdict") or r.get("__error__") or "no time")[:300]
    best = env.get("best_config") if isinstance(env, dict) else None
    if not isinstance(best, dict) or failed(best):
        ok = [r for r in results or [] if not failed(r)]
        best = min(ok, key=lambda r: r["time"]) if ok else None
    return {
        "kind": "tune_kernel",
        "kernel_name": str(name),
        "wall_s": seconds,
        "params": names,
        "configurations": len(results or []),
        "failed": sum(1 for r in results or [] if failed(r)),
        "best": None if best is None else {n: plain(best.get(n)) for n in names},
        "best_time_ms": None if best is None else float(best["time"]),
        "device": (env or {}).get("device_name") if isinstance(env, dict) else None,
        "times_ms": measured,
        "failures": failures,
    }


def summarise_run(name, params, returned, seconds):
    """What one ``run_kernel`` call returned: per argument its shape, dtype and sum (to compare the tools)."""
    arrays = []
    for a in returned or []:
        try:
            import numpy as np

            host = a.get() if hasattr(a, "__cuda_array_interface__") else np.asarray(a)
            arrays.append({
                "shape": list(host.shape),
                "dtype": str(host.dtype),
                "sum": plain(float(np.sum(host, dtype=np.float64))),
            })
        except Exception as e:  # noqa: BLE001 (a summary must not stop the script)
            arrays.append({"unreadable": repr(e)})
    return {"kind": "run_kernel", "kernel_name": str(name), "wall_s": seconds,
            "params": {k: plain(v) for k, v in dict(params).items()}, "arguments": arrays}


def wrap(module):
    """Replaces ``module.tune_kernel`` and ``module.run_kernel`` with recording wrappers."""
    calls = RESULT["calls"]
    tune, run = module.tune_kernel, module.run_kernel

    def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params, *args, **kwargs):
        start = time.perf_counter()
        try:
            returned = tune(kernel_name, kernel_source, problem_size, arguments, tune_params, *args, **kwargs)
        except BaseException:
            calls.append({"kind": "tune_kernel", "kernel_name": str(kernel_name),
                          "wall_s": time.perf_counter() - start, "raised": True})
            save()
            raise
        calls.append(summarise_tuning(kernel_name, tune_params, returned, time.perf_counter() - start))
        save()
        return returned

    def run_kernel(kernel_name, kernel_source, problem_size, arguments, params, *args, **kwargs):
        start = time.perf_counter()
        try:
            returned = run(kernel_name, kernel_source, problem_size, arguments, params, *args, **kwargs)
        except BaseException:
            calls.append({"kind": "run_kernel", "kernel_name": str(kernel_name),
                          "wall_s": time.perf_counter() - start, "raised": True})
            save()
            raise
        calls.append(summarise_run(kernel_name, params, returned, time.perf_counter() - start))
        save()
        return returned

    module.tune_kernel = tune_kernel
    module.run_kernel = run_kernel


def ended(exc):
    """How the script ended with ``exc``: status and details."""
    kind = type(exc).__name__
    if kind == "Skipped":  # pytest.skip()
        return {"status": "skipped", "error": str(exc)}
    if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.split(".")[0] not in ("kt", "kernel_tuner"):
        return {"status": "missing module", "error": f"{kind}: {exc}", "missing": exc.name}
    if isinstance(exc, SystemExit) and exc.code in (0, None):
        return {"status": "ok"}
    tail = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {"status": "error", "error": f"{kind}: {exc}"[:2000], "traceback": "".join(tail)[-4000:]}


class Outcomes:
    """A pytest plugin that counts the tests' outcomes."""

    def __init__(self):
        self.counts = {}

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome == "skipped" or (report.when == "setup" and report.failed):
            self.counts[report.outcome] = self.counts.get(report.outcome, 0) + 1


def main():
    global RESULT_PATH
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True, choices=["kt", "kernel_tuner"])
    p.add_argument("--script", required=True)
    p.add_argument("--result", required=True)
    p.add_argument("--mode", default="main", choices=["main", "pytest"])
    a = p.parse_args()
    RESULT_PATH = a.result
    RESULT.update({"tool": a.tool, "script": os.path.basename(a.script), "mode": a.mode, "calls": [],
                   "status": "running", "python": sys.version.split()[0]})
    start = time.perf_counter()
    try:
        module = importlib.import_module(a.tool)
        RESULT["tool_version"] = getattr(module, "__version__", None) or _dist_version(a.tool)
        RESULT["tool_file"] = module.__file__
        wrap(module)
        save()
        sys.argv = [a.script]
        sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
        if a.mode == "main":
            runpy.run_path(a.script, run_name="__main__")
            RESULT.update(status="ok")
        else:
            import pytest

            outcomes = Outcomes()
            code = pytest.main(["-q", "-p", "no:cacheprovider", a.script], plugins=[outcomes])
            RESULT["pytest"] = {"exit_code": int(code), "outcomes": outcomes.counts}
            counts = outcomes.counts
            if int(code) == 0 and counts.get("passed"):
                RESULT.update(status="ok")
            elif int(code) == 0 and counts.get("skipped"):
                RESULT.update(status="skipped", error="every test skipped")
            else:
                RESULT.update(status="error", error=f"pytest exit code {int(code)}: {counts}")
    except BaseException as e:  # noqa: BLE001 (everything a script can end with is recorded)
        RESULT.update(ended(e))
    RESULT["wall_s"] = time.perf_counter() - start
    save()


def _dist_version(name):
    try:
        import importlib.metadata as m

        return m.version(name)
    except Exception:  # noqa: BLE001
        return None


if __name__ == "__main__":
    sys.stdout = io.TextIOWrapper(sys.stdout.buffer, line_buffering=True) if hasattr(sys.stdout, "buffer") else sys.stdout
    main()
