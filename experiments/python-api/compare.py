"""Runs each tuning script of this folder with Kernel Tuner and then with kt (`import kt as kernel_tuner`),
in one process, and prints both best configurations and wall times. Needs a GPU, cupy, Kernel Tuner 1.5 and
kt's wheel (README.md says how to build and carry it).
    python3 compare.py [script ...]      (default: all three)"""

import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SCRIPTS = ["tune_vector_add", "tune_matmul", "tune_saxpy_strings"]


def best_of(results, env, names):
    best = env.get("best_config") or min(
        (r for r in results if "__error__" not in r and "time" in r), key=lambda r: r["time"]
    )
    return {n: best[n] for n in names}, best["time"]


class Timed:
    """A tuner module with its `tune_kernel` timed: a script's own work (numpy making its arrays and answers)
    is the same for both tuners and is not tuning, so the ratio is taken over the `tune_kernel` call."""

    def __init__(self, module, **extra):
        self.module = module
        self.extra = extra
        self.seconds = 0.0

    def tune_kernel(self, *args, **kwargs):
        kwargs.update(self.extra)
        start = time.perf_counter()
        try:
            return self.module.tune_kernel(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def time_of(results, params):
    """The time a tool measured for `params` (None when it did not measure it)."""
    for r in results:
        if "time" in r and all(r.get(k) == v for k, v in params.items()):
            return r["time"]
    return None


def main():
    import kernel_tuner
    import kt

    scripts = sys.argv[1:] or SCRIPTS
    print(f"kernel_tuner {kernel_tuner.__version__ if hasattr(kernel_tuner, '__version__') else '?'}, kt {kt.__version__}")
    for name in scripts:
        module = importlib.import_module(name)
        # kt as the script calls it, then with Kernel Tuner's 7 timed runs per configuration forced (left
        # out, kt samples each configuration until its median is sure, at least 3 runs)
        runs = (("Kernel Tuner", kernel_tuner, {}), ("kt", kt, {}), ("kt, 7 runs", kt, {"iterations": 7}))
        kernel_tuner_best = None
        for label, tuner, extra in runs:
            timed = Timed(tuner, **extra)
            start = time.perf_counter()
            results, env = module.tune(timed)
            script = time.perf_counter() - start
            params, ms = best_of(results, env, list(module.TUNE_PARAMS))
            failed = sum(1 for r in results if "__error__" in r)
            print(
                f"{name:20s} {label:12s} {env.get('device_name', '?')}: tune_kernel {timed.seconds:6.2f} s "
                f"(script {script:6.2f} s), {len(results)} configurations ({failed} failed), best {params} at {ms:.4f} ms"
            )
            if label == "Kernel Tuner":
                kernel_tuner_best = params
            elif params != kernel_tuner_best and kernel_tuner_best is not None:
                # a different pick: how far, by this tool's own timing, Kernel Tuner's best is from it
                theirs = time_of(results, kernel_tuner_best)
                if theirs is not None:
                    print(f"{'':33s} Kernel Tuner's best measured by kt: {theirs:.4f} ms ({100 * (theirs / ms - 1):+.1f} % of kt's best)")
            if "kt_phases" in env:
                phases = {k: round(v) for k, v in env["kt_phases"].items()}
                wall = {k: round(v, 2) for k, v in env.get("kt_wall_s", {}).items()}
                print(f"{'':33s} kt phases (ms) {phases}, wall (s) {wall}")
                e = env.get("kt_tuning_efficiency")
                if e:
                    raced = sum(1 for r in results if "kt_aborted_early" in r)
                    print(f"{'':33s} kt tuning efficiency {100 * e['efficiency']:.0f} % (needed GPU "
                          f"{e['needed_gpu_ms'] / 1e3:.2f} s, spent {e['spent_gpu_ms'] / 1e3:.2f} s, "
                          f"wall {e['wall_ms'] / 1e3:.2f} s); {raced} configurations lost the race")


if __name__ == "__main__":
    main()
