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


def main():
    import kernel_tuner
    import kt

    scripts = sys.argv[1:] or SCRIPTS
    print(f"kernel_tuner {kernel_tuner.__version__ if hasattr(kernel_tuner, '__version__') else '?'}, kt {kt.__version__}")
    for name in scripts:
        module = importlib.import_module(name)
        for label, tuner in (("Kernel Tuner", kernel_tuner), ("kt", kt)):
            start = time.perf_counter()
            results, env = module.tune(tuner)
            wall = time.perf_counter() - start
            params, ms = best_of(results, env, list(module.TUNE_PARAMS))
            failed = sum(1 for r in results if "__error__" in r)
            print(
                f"{name:20s} {label:12s} {env.get('device_name', '?')}: wall {wall:7.1f} s, "
                f"{len(results)} configurations ({failed} failed), best {params} at {ms:.4f} ms"
            )


if __name__ == "__main__":
    main()
