"""``kt.tune_kernel``: Kernel Tuner's ``tune_kernel`` signature on kt's tuner.

The arguments kt supports are turned into plain data (arrays saved as ``.npy`` files in a temporary
directory) for the compiled module; the result comes back shaped as Kernel Tuner's ``(results, env)`` by
``_results.py``. Every other Kernel Tuner argument raises a TypeError naming it when it is given.
"""

import json
import os
import tempfile
import time

import numpy as np

from . import _kt
from ._arguments import array_arg, constant_args, restriction_parts, scalar_arg, tune_params_list
from ._results import kernel_tuner_results
from ._worker import worker_command, worker_env

# Kernel Tuner arguments kt does not support, with their "not given" value. Giving one is an error.
_REFUSED = {
    "smem_args": None,
    "texmem_args": None,
    "compiler": None,
    "defines": None,
    "log": None,
    "metrics": None,
    "simulation_mode": None,
    "parallel": None,
    "observers": None,
    "objectives": None,
    "platform": 0,
    "device": 0,
}

_STRATEGY_OPTIONS = ("max_fevals", "time_limit")
_CUDA_LANGS = (None, "CUDA", "cuda", "CUPY", "cupy", "NVCUDA", "nvcuda")


def _tuner_cache_dir():
    """kt's own tuner cache, shared with `kt tune`: compiled modules and device facts such as the measured copy
    bandwidth, so a second call does not compile or measure them again. (Kernel Tuner's `cache` is the
    results file and stays separate.)"""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kt", "tuner")


def _refuse(name, why="kt does not support it"):
    raise TypeError(f"kt.tune_kernel: argument `{name}` is not supported ({why}); leave it out")


def _check_refused(given):
    for name, default in _REFUSED.items():
        value = given[name]
        unchanged = value is default or (isinstance(value, int) and value == default)
        if not unchanged:
            _refuse(name)
    if given["objective"] not in (None, "time"):
        _refuse("objective", "kt minimises time only")
    if given["objective_higher_is_better"] not in (None, False):
        _refuse("objective_higher_is_better", "kt minimises time only")
    if given["lang"] not in _CUDA_LANGS:
        _refuse("lang", f"kt tunes CUDA kernels only, not {given['lang']!r}")
    if callable(given["verify"]):
        _refuse("verify", "a verify function; give `answer` (and `atol`) instead")
    if given["verify"] is not None:
        _refuse("verify", "give `answer` (and `atol`) instead")


def _source_text(kernel_source):
    if isinstance(kernel_source, (list, tuple)):
        _refuse("kernel_source", "a list of files; give one source string or one file name")
    if callable(kernel_source):
        _refuse("kernel_source", "a code generator function; give the source string")
    text = str(kernel_source)
    if "\n" not in text and os.path.isfile(text):
        with open(text, encoding="utf-8") as f:
            return f.read()
    return text


def _problem_size(problem_size):
    sizes = problem_size if isinstance(problem_size, (list, tuple)) else [problem_size]
    out = []
    for s in sizes:
        if callable(s):
            _refuse("problem_size", "a function; give numbers or expressions over parameter names")
        out.append(str(int(s)) if isinstance(s, (int, np.integer)) else str(s))
    return out


def _grid_div(div):
    if div is None:
        return None
    if callable(div):
        _refuse("grid_div", "a function; give a list of parameter names or expressions")
    return [str(d) for d in (div if isinstance(div, (list, tuple)) else [div])]


def _strategy_options(options):
    options = dict(options or {})
    for key in options:
        if key not in _STRATEGY_OPTIONS:
            raise TypeError(
                f"kt.tune_kernel: strategy option `{key}` is not supported (kt takes {', '.join(_STRATEGY_OPTIONS)})"
            )
    return options


def _block_size_names(names):
    """Kernel Tuner's ``block_size_names``: up to three parameter names, x first (kt checks the names)."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ValueError("kt.tune_kernel: block_size_names must be a list of parameter names, e.g. ['bx', 'by']")
    return list(names)


def _cache_path(cache):
    if cache is None:
        return None
    path = str(cache)
    return path if path.endswith(".json") else path + ".json"


def _request(given, folder):
    arguments = given["arguments"]
    answer = given["answer"]
    if answer is not None and len(answer) != len(arguments):
        raise ValueError(
            f"kt.tune_kernel: `answer` has {len(answer)} entries, `arguments` {len(arguments)}: give one per argument (None where there is nothing to check)"
        )
    args = []
    for i, arg in enumerate(arguments):
        expected = None if answer is None else answer[i]
        if isinstance(arg, np.ndarray):
            args.append(array_arg(i, arg, expected, folder))
        elif isinstance(arg, np.generic):
            if expected is not None:
                raise ValueError(f"kt.tune_kernel: answer {i} is given for a scalar argument; use None")
            args.append(scalar_arg(i, arg))
        else:
            raise TypeError(
                f"kt.tune_kernel: argument {i} is a {type(arg).__name__}; give numpy arrays and numpy scalars (e.g. np.int32(n))"
            )
    strings, callables = restriction_parts(given["restrictions"], given["tune_params"])
    options = _strategy_options(given["strategy_options"])
    request = {
        "kernel_name": given["kernel_name"],
        "kernel_source": _source_text(given["kernel_source"]),
        "problem_size": _problem_size(given["problem_size"]),
        "arguments": args,
        "constants": constant_args(given["cmem_args"], folder),
        "tune_params": tune_params_list(given["tune_params"]),
        "restrictions": strings,
        "grid_div": [_grid_div(given[f"grid_div_{d}"]) for d in "xyz"],
        "block_size_names": _block_size_names(given["block_size_names"]),
        "atol": float(given["atol"]),
        "strategy": given["strategy"],
        "max_fevals": options.get("max_fevals"),
        "time_limit": options.get("time_limit"),
        # given: at least that many timed runs per configuration; left out: kt's own rule (at least 3, until
        # the median's standard error is under 1 %), which takes as many as a kernel's noise needs
        "iterations": None if given["iterations"] is None else int(given["iterations"]),
        "compiler_options": list(given["compiler_options"] or []),
        "cache": _cache_path(given["cache"]),
        "seed": given["seed"],
    }
    return request, callables


def tune_kernel(
    kernel_name,
    kernel_source,
    problem_size,
    arguments,
    tune_params,
    grid_div_x=None,
    grid_div_y=None,
    grid_div_z=None,
    restrictions=None,
    answer=None,
    atol=1e-6,
    verify=None,
    verbose=False,
    lang=None,
    device=0,
    platform=0,
    smem_args=None,
    cmem_args=None,
    texmem_args=None,
    compiler=None,
    compiler_options=None,
    defines=None,
    log=None,
    iterations=None,
    block_size_names=None,
    quiet=False,
    strategy=None,
    strategy_options=None,
    cache=None,
    metrics=None,
    simulation_mode=None,
    parallel=None,
    observers=None,
    objective=None,
    objective_higher_is_better=None,
    objectives=None,
    seed=None,
):
    """Tunes ``kernel_name`` as Kernel Tuner's ``tune_kernel`` does and returns ``(results, env)``.

    ``cmem_args``: as in Kernel Tuner, ``{"symbol": numpy_array}`` for ``__constant__`` symbols of the source;
    kt writes each into every configuration's module before launching it.

    ``iterations``: when given, kt times every configuration at least that many times; left out (Kernel
    Tuner's default is 7), kt samples until the median's standard error is under 1 % (at least 3 runs).

    ``results`` lists one dict per configuration kt measured: the parameters, ``time`` (ms, the mean of
    ``times`` as in Kernel Tuner), ``times``, ``compile_time``, ``benchmark_time``, and kt's extras
    (``kt_verdict``, ``kt_objective_ms`` (the median kt ranks by), ``kt_per_test_ms``,
    ``kt_percent_of_peak``, …); a failed configuration has ``__error__`` instead of times. ``env`` has the
    device and ``best_config``.
    """
    given = dict(locals())
    _check_refused(given)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kt-tune-") as folder:
        request, callables = _request(given, folder)
        saved = time.perf_counter()
        text = _kt.tune(
            json.dumps(request), worker_command(), worker_env(), callables, _tuner_cache_dir()
        )
        tuned = time.perf_counter()
    reply = json.loads(text)
    if request["cache"] and reply.get("kernel_tuner_cache"):
        with open(request["cache"], "w", encoding="utf-8") as f:
            f.write(reply["kernel_tuner_cache"])
    results, env = kernel_tuner_results(reply, request)
    # the call's wall time by part (s): saving the arrays for the worker, tuning, the rest (clean-up, shaping)
    env["kt_wall_s"] = {
        "save_arguments": saved - started,
        "tune": tuned - saved,
        "total": time.perf_counter() - started,
    }
    if verbose and not quiet:
        for r in results:
            print({k: v for k, v in r.items() if not k.startswith("kt_")})
    return results, env
