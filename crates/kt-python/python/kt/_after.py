"""What ``kt.tune_kernel`` does to its results after the tuning: a ``verify`` function's check of every
configuration that ran, and Kernel Tuner's user-defined ``metrics``."""

import inspect
import math

import numpy as np

from ._arguments import host_array, is_array
from ._record import record

# a configuration a verify function rejected, or that could not run again for it
VERIFY_FAILED = "wrong answer (verify)"


def _with_atol(verify):
    """``verify`` as a function that takes ``atol`` (Kernel Tuner lets it leave the keyword out)."""
    try:
        takes_atol = "atol" in inspect.signature(verify).parameters
    except (TypeError, ValueError):
        takes_atol = True
    return verify if takes_atol else (lambda answer, outputs, atol=None: verify(answer, outputs))


def _fail(result, verdict):
    for key in ("time", "times"):
        result.pop(key, None)
    result["__error__"] = "RuntimeFailedConfig"
    result["kt_verdict"] = verdict
    result["kt_objective_ms"] = None


def apply_verify(results, env, request, folder, verify, answer, atol, arguments, generator):
    """Runs every configuration of ``results`` that ran once more, hands ``verify`` the arrays it checks (those
    with an answer; every array without one) and fails the configurations it rejects; the best is chosen again
    among the others."""
    verify = _with_atol(verify)
    names = [name for name, _ in request["tune_params"]]
    ran = [r for r in results if "__error__" not in r]
    if answer is None:
        outputs = [i for i, a in enumerate(arguments) if is_array(a)]
        expected = None
    else:
        outputs = [i for i, a in enumerate(answer) if a is not None and is_array(arguments[i])]
        expected = [None if a is None else host_array(a) for a in answer]

    def on_outputs(i, arrays, error):
        if error is not None:
            _fail(ran[i], f"{VERIFY_FAILED}: it did not run again ({error})")
            return
        host = [arrays.get(j) for j in range(len(arguments))]
        host = [None if h is None else h.reshape(np.shape(arguments[j])) for j, h in enumerate(host)]
        if not verify(expected, host, atol=atol):
            _fail(ran[i], VERIFY_FAILED)

    configs = [{n: r[n] for n in names if n in r} for r in ran]
    if configs:
        record(request, folder, configs, outputs, generator, on_outputs)
    still = [r for r in results if "__error__" not in r]
    env["best_config"] = min(still, key=lambda r: r.get("kt_objective_ms") or r["time"]) if still else None
    env["kt_verified"] = "verify function"


def apply_metrics(results, metrics):
    """Kernel Tuner's ``metrics``: in order, for every configuration that ran, a function of its result dict or
    an expression over the dict's keys (``time``, the parameters, earlier metrics), stored under its name."""
    if not metrics:
        return
    for result in results:
        if "__error__" in result:
            continue
        for name, metric in metrics.items():
            if callable(metric):
                result[name] = metric(result)
            elif isinstance(metric, str):
                result[name] = eval(metric, {"np": np, "numpy": np, "math": math}, dict(result))  # noqa: S307
            else:
                raise ValueError(f"kt.tune_kernel: metric {name!r} must be a function or an expression string")
