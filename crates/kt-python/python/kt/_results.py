"""kt's tuning result shaped as Kernel Tuner's ``(results, env)``, with kt's extras under ``kt_`` keys."""

import datetime

from ._kt import __version__

# Kernel Tuner's markers for a configuration that failed (its cache files use the same names).
_COMPILE_FAILED = "CompilationFailedConfig"
_RUNTIME_FAILED = "RuntimeFailedConfig"


def _entry(m, verdict, names):
    config = dict(m["config"])
    entry = {n: config[n] for n in names if n in config}
    timing = m.get("timing") or {}
    times = list(timing.get("samples_ms") or [])
    if verdict == "ok" and times:
        entry["time"] = sum(times) / len(times)
        entry["times"] = times
    else:
        entry["__error__"] = _COMPILE_FAILED if verdict == "compile error" else _RUNTIME_FAILED
    entry["compile_time"] = m.get("compile_ms", 0.0)
    entry["verification_time"] = 0
    entry["benchmark_time"] = m.get("benchmark_ms", 0.0)
    entry["strategy_time"] = 0
    entry["framework_time"] = 0
    entry["timestamp"] = str(datetime.datetime.now(datetime.timezone.utc))
    entry["kt_verdict"] = verdict
    entry["kt_objective_ms"] = m.get("objective") if verdict == "ok" else None
    entry["kt_per_test_ms"] = m.get("per_test_ms", [])
    entry["kt_percent_of_peak"] = m.get("percent_of_peak")
    entry["kt_gflops"] = m.get("gflops")
    entry["kt_gbps"] = m.get("gbps")
    entry["kt_registers"] = m.get("registers")
    entry["kt_from_cache"] = m.get("from_cache", False)
    # a configuration that lost the race: the evidence (samples, median, fastest, best, bound in ms)
    if timing.get("race"):
        entry["kt_aborted_early"] = timing["race"]
    return entry


def _env(result, request, best):
    device = result["device"]
    major, minor = device["compute_capability"]
    phases = result.get("phases") or {}
    return {
        "device_name": device["name"],
        "compute_capability": f"{major}{minor}",
        # the runs timed per configuration: as given, else kt's minimum (it samples until the median is sure)
        "iterations": request["iterations"] or 3,
        "compiler_options": request["compiler_options"],
        "device_properties": device,
        "best_config": best,
        "total_compile_time": phases.get("compile_cpu_ms", 0.0),
        "total_benchmark_time": phases.get("benchmark_ms", 0.0),
        "kt_version": __version__,
        "kt_strategy": result["strategy"],
        "kt_space_size": result["space_size"],
        "kt_worker_restarts": result.get("worker_restarts", 0),
        "kt_verified": any(a.get("answer") for a in request["arguments"]),
        # where the tuner's time went (ms): worker start, uploads, compilation, reference, the search
        "kt_phases": phases,
        # the GPU time the ranking needed beside the tuning's wall time (ms) and their ratio
        "kt_tuning_efficiency": result.get("efficiency"),
    }


def kernel_tuner_results(reply, request):
    """(results, env) from the compiled module's reply to ``request``."""
    result = reply["result"]
    names = [name for name, _ in request["tune_params"]]
    results = [
        _entry(m, v, names) for m, v in zip(result["measurements"], reply["verdicts"])
    ]
    best = None
    if result.get("best"):
        best_config = dict(result["best"]["config"])
        best = next(
            (r for r in results if all(r.get(n) == best_config.get(n) for n in names) and "time" in r),
            None,
        )
    return results, _env(result, request, best)
