"""``kt.tune_kernel``: Kernel Tuner's ``tune_kernel`` signature on kt's tuner.

The arguments kt supports are turned into plain data (arrays saved as ``.npy`` files in a temporary
directory) for the compiled module; the result comes back shaped as Kernel Tuner's ``(results, env)`` by
``_results.py``; ``metrics`` and a ``verify`` function are applied to it afterwards (``_after.py``). Every
other Kernel Tuner argument raises a TypeError naming it when it is given.
"""

import json
import os
import tempfile
import time

import numpy as np

from . import _kt
from ._after import apply_metrics, apply_verify
from ._arguments import (
    array_arg,
    constant_args,
    host_array,
    is_array,
    restriction_parts,
    scalar_arg,
    tune_params_list,
)
from ._results import kernel_tuner_results
from ._worker import tuner_cache_dir, worker_command, worker_env

# Kernel Tuner arguments kt does not support, with their "not given" value. Giving one is an error.
_REFUSED = {
    "smem_args": None,
    "texmem_args": None,
    "compiler": None,
    "defines": None,
    "log": None,
    "simulation_mode": None,
    "observers": None,
    "objectives": None,
    "platform": 0,
    "device": 0,
}

# why, for the arguments whose reason is more than "kt does not support it"
_WHY = {
    "observers": "kt measures time only: no NVML, power or counter observers",
    "texmem_args": "kt does not bind texture memory; texture references are gone from CUDA 12 on",
    "smem_args": "kt does not set dynamic shared memory from arguments",
    "simulation_mode": "kt has no simulation from a cache file",
    "objectives": "kt minimises time only",
}

_STRATEGY_OPTIONS = ("max_fevals", "time_limit")
# Kernel Tuner's names of its CUDA backends (any case, as Kernel Tuner reads them)
_CUDA_LANGS = ("CUDA", "CUPY", "NVCUDA", "PYCUDA")


def _refuse(name, why="kt does not support it", function="tune_kernel"):
    raise TypeError(f"kt.{function}: argument `{name}` is not supported ({why}); leave it out")


def check_refused(given, refused=_REFUSED, function="tune_kernel"):
    """Raises a TypeError naming the first argument of ``given`` kt does not support."""
    for name, default in refused.items():
        value = given[name]
        unchanged = value is default or (isinstance(value, int) and value == default)
        if not unchanged:
            _refuse(name, _WHY.get(name, "kt does not support it"), function)
    lang = given["lang"]
    if lang is not None and (not isinstance(lang, str) or lang.upper() not in _CUDA_LANGS):
        _refuse("lang", f"kt tunes CUDA kernels only, not {given['lang']!r}", function)


def _check_refused(given):
    check_refused(given)
    if given["objective"] not in (None, "time"):
        _refuse("objective", "kt minimises time only")
    if given["objective_higher_is_better"] not in (None, False):
        _refuse("objective_higher_is_better", "kt minimises time only")
    if given["verify"] is not None and not callable(given["verify"]):
        _refuse("verify", "give a function verify(answer, outputs, atol=None), or `answer` (and `atol`)")
    if given["parallel"] not in (None, False, True) and not isinstance(given["parallel"], int):
        raise TypeError("kt.tune_kernel: `parallel` is True, False or a number of workers")
    if given["metrics"] is not None and not isinstance(given["metrics"], dict):
        raise ValueError("kt.tune_kernel: metrics must be a dict of name to function or expression string")


def source_and_generator(source, tune_params, function="tune_kernel"):
    """(text, generator): the kernel's source as text, and the code generator when ``source`` is one (a
    function of the configuration's dict that returns the source, as Kernel Tuner calls it, e.g. a Jinja
    template's ``render``). A generator's text is its source at the first value of every parameter: what kt
    reads the kernel's signature from; each configuration is compiled from the generator's own text."""
    if isinstance(source, (list, tuple)):
        _refuse(
            "kernel_source",
            "a list of files (Kernel Tuner copies the others next to the first for host code); give one "
            "source string or one file name, with its headers #included",
            function,
        )
    if callable(source):
        first = {name: list(values)[0] for name, values in tune_params.items()}
        return str(source(first)), source
    text = str(source)
    if "\n" not in text and os.path.isfile(text):
        with open(text, encoding="utf-8") as f:
            return f.read(), None
    return text, None


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


def check_answer(answer, arguments):
    if answer is not None and len(answer) != len(arguments):
        raise ValueError(
            f"kt.tune_kernel: `answer` has {len(answer)} entries, `arguments` {len(arguments)}: give one per argument (None where there is nothing to check)"
        )


def request_for(given, folder, source_text, function="tune_kernel"):
    """The compiled module's request (kt-tuner's ``TuneCall``) for ``given`` (``tune_kernel``'s arguments by
    name), its arrays saved in ``folder``; and the restriction functions. ``answer`` is kt's own check: None
    when a ``verify`` function checks instead."""
    arguments = given["arguments"]
    answer = given["answer"]
    check_answer(answer, arguments)
    args = []
    for i, arg in enumerate(arguments):
        expected = None if answer is None else answer[i]
        if is_array(arg):
            args.append(array_arg(i, host_array(arg), None if expected is None else host_array(expected), folder))
        elif isinstance(arg, np.generic):
            if expected is not None:
                raise ValueError(f"kt.{function}: answer {i} is given for a scalar argument; use None")
            args.append(scalar_arg(i, arg))
        else:
            raise TypeError(
                f"kt.{function}: argument {i} is a {type(arg).__name__}; give numpy (or cupy) arrays and numpy scalars (e.g. np.int32(n))"
            )
    strings, callables = restriction_parts(given["restrictions"], given["tune_params"])
    options = _strategy_options(given["strategy_options"])
    request = {
        "kernel_name": given["kernel_name"],
        "kernel_source": source_text,
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

    ``kernel_source``: the source, a file name, or a code generator (a function of the configuration's dict
    that returns the source, e.g. a Jinja template's ``render``), called for every configuration.

    ``arguments``: numpy arrays and numpy scalars; cupy arrays are copied to the host first (kt's worker
    process has its own copies; the caller's arrays are left as they are).

    ``cmem_args``: as in Kernel Tuner, ``{"symbol": numpy_array}`` for ``__constant__`` symbols of the source;
    kt writes each into every configuration's module before launching it.

    ``answer`` and ``atol``: every configuration's outputs are checked on the GPU before it is timed. With a
    ``verify`` function (``verify(answer, outputs, atol=atol)``, as in Kernel Tuner) kt instead runs every
    configuration that ran once more after the tuning and hands the arrays whose ``answer`` is not None (all
    arrays without an answer) to the function; a configuration it rejects gets ``__error__`` and
    ``kt_verdict`` "wrong answer (verify)" and cannot be the best (Kernel Tuner stops the tuning there).

    ``metrics``: as in Kernel Tuner, a dict of name to a function of the result dict or an expression over
    its keys, computed in order for every configuration that ran.

    ``parallel``: accepted; kt tunes on one GPU and compiles on every core while it measures (Kernel
    Tuner's parallel runner spreads configurations over GPUs; the results are the same).

    ``iterations``: when given, kt times every configuration at least that many times; left out (Kernel
    Tuner's default is 7), kt samples until the median's standard error is under 1 % (at least 3 runs).

    Unless ``quiet``, each configuration is printed as the tuning finishes it (``name=value, …, time=…ms``,
    the median kt ranks by, or why it failed) and the best one at the end, as Kernel Tuner prints them;
    ``verbose`` adds every result dict at the end.

    ``results`` lists one dict per configuration kt measured: the parameters, ``time`` (ms, the mean of
    ``times`` as in Kernel Tuner), ``times``, ``compile_time``, ``benchmark_time``, and kt's extras
    (``kt_verdict``, ``kt_objective_ms`` (the median kt ranks by), ``kt_per_test_ms``,
    ``kt_percent_of_peak``, …); a failed configuration has ``__error__`` instead of times. ``env`` has the
    device and ``best_config``.
    """
    given = dict(locals())
    _check_refused(given)
    started = time.perf_counter()
    source_text, generator = source_and_generator(kernel_source, tune_params)
    verify_fn = given["verify"]
    if verify_fn is not None:
        check_answer(answer, arguments)
        # the function checks, not kt: the answers may have any shape the function reads
        given = dict(given, answer=None)
    with tempfile.TemporaryDirectory(prefix="kt-tune-") as folder:
        request, callables = request_for(given, folder, source_text)
        saved = time.perf_counter()
        text = _kt.tune(
            json.dumps(request), worker_command(), worker_env(), callables, tuner_cache_dir(), generator,
            None if quiet else print_configuration,
        )
        tuned = time.perf_counter()
        reply = json.loads(text)
        results, env = kernel_tuner_results(reply, request)
        if verify_fn is not None:
            apply_verify(results, env, request, folder, verify_fn, answer, atol, arguments, generator)
    if request["cache"] and reply.get("kernel_tuner_cache"):
        with open(request["cache"], "w", encoding="utf-8") as f:
            f.write(reply["kernel_tuner_cache"])
    apply_metrics(results, metrics)
    # the call's wall time by part (s): saving the arrays for the worker, tuning, the rest (clean-up, shaping)
    env["kt_wall_s"] = {
        "save_arguments": saved - started,
        "tune": tuned - saved,
        "total": time.perf_counter() - started,
    }
    if not quiet:
        print_best(env, tune_params)
    if verbose and not quiet:
        for r in results:
            print({k: v for k, v in r.items() if not k.startswith("kt_")})
    return results, env


def print_configuration(done, total, config, verdict, time_ms):
    """One line per configuration as the tuning finishes it, as Kernel Tuner prints them (its
    ``name=value, …, time=…ms``); the time is the median kt ranks by, a failed configuration says why."""
    parts = [f"{name}={value}" for name, value in config.items()]
    parts.append(f"time={time_ms:.3f}ms" if verdict == "ok" and time_ms is not None else f"time={verdict}")
    print(", ".join(parts) + f"  [{done}/{total}]", flush=True)


def print_best(env, tune_params):
    """Kernel Tuner's closing lines: the best configuration and its time (mean of its runs, as ``time``)."""
    best = env.get("best_config")
    if not isinstance(best, dict) or not isinstance(best.get("time"), (int, float)):
        print("no results to report")
        return
    parts = [f"{name}={best[name]}" for name in tune_params if name in best]
    parts.append(f"time={best['time']:.3f}ms")
    print("\nBEST PERFORMING CONFIGURATION FOR OBJECTIVE time:")
    print(", ".join(parts))
