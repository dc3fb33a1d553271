"""The rest of Kernel Tuner's API that its CUDA example scripts use with ``import kt as kernel_tuner``:
``run_kernel``, ``kernelbuilder.PythonKernel``, code generators as ``kernel_source``, ``metrics``, ``verify``
functions, ``util``, ``file_utils`` (T4 files), ``strategies``, cupy arrays, and the clear errors of what kt
does not have (observers, accuracy tuning, energy). On kt's fake device (KT_TUNER_FAKE_WORKER=ok): NVRTC
compiles every configuration for real; the fake "launches" it in |block_size_x - 64| / 64 + 1 ms, and a run
that records its arrays writes float32 0, 1, 2, … into each. Run by tests/run.sh."""

import json
import os
import sys
import tempfile

import numpy as np

import kt
from checks import check, expect_error

VECTOR_ADD = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

# Kernel Tuner's convention: `#pragma unroll loop_unroll_factor_0`, where 0 leaves the choice to the compiler
UNROLLED = """
__global__ void sum_floats(float *out, const float *x, int n) {
    float s = 0.0f;
    #pragma unroll loop_unroll_factor_0
    for (int i = threadIdx.x; i < n; i += block_size_x) s += x[i];
    out[threadIdx.x] = s;
}
"""


class DeviceArray:
    """What kt reads of a cupy array: ``__cuda_array_interface__``, ``get()``, ``set()``, shape and dtype."""

    def __init__(self, values):
        self.host = np.array(values)
        self.sets = 0

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.host.shape, "typestr": self.host.dtype.str, "data": (0, False), "version": 3}

    shape = property(lambda self: self.host.shape)
    dtype = property(lambda self: self.host.dtype)

    def get(self):
        return self.host.copy()

    def set(self, values):
        self.sets += 1
        self.host[...] = values


def vector_args(n=1000):
    a = np.random.randn(n).astype(np.float32)
    b = np.random.randn(n).astype(np.float32)
    return [np.zeros_like(a), a, b, np.int32(n)]


def test_run_kernel_returns_every_argument_after_the_launch():
    args = vector_args()
    out = kt.run_kernel("vector_add", VECTOR_ADD, 1000, args, {"block_size_x": 128})
    check("one entry per argument", len(out) == 4, out)
    # the fake device writes 0, 1, 2, … into every array it hands back
    check("arrays as after the launch", all(np.array_equal(o, np.arange(1000, dtype=np.float32)) for o in out[:3]), out)
    check("in the arguments' dtype and shape", all(o.dtype == np.float32 and o.shape == (1000,) for o in out[:3]))
    check("scalars as given", out[3] == np.int32(1000) and isinstance(out[3], np.int32), out[3])
    check("the caller's arrays are left alone", not args[0].any())
    # a file name as the source; block_size_x left at Kernel Tuner's default (256)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "vector_add.cu")
        with open(path, "w") as f:
            f.write(VECTOR_ADD)
        out = kt.run_kernel("vector_add", path, (1000, 1), args, {})
    check("from a file, default block size", out[0].shape == (1000,), out[0])


def _children():
    """This process's child processes (Linux)."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            pids.update(f.read().split())
    return pids


def test_the_worker_is_kept_between_calls_as_kernel_tuners_context_is():
    args = vector_args(512)
    kt._kt.release_tuner()
    check("no worker before a call", not kt._kt.tuner_kept() and not _children(), _children())
    kt.run_kernel("vector_add", VECTOR_ADD, 512, args, {"block_size_x": 64})
    first = _children()
    check("one worker after the first call, kept", kt._kt.tuner_kept() and len(first) == 1, first)
    kt.run_kernel("vector_add", VECTOR_ADD, 512, args, {"block_size_x": 128})
    kt.tune_kernel("vector_add", VECTOR_ADD, 512, args, {"block_size_x": [32, 64]}, quiet=True)
    check("the same worker serves the next calls", _children() == first, (first, _children()))
    kt._kt.release_tuner()
    check("released: no worker left", not kt._kt.tuner_kept() and not _children(), _children())


def test_each_configuration_is_printed_as_it_is_tuned_unless_quiet():
    import contextlib
    import io

    args = vector_args(512)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        kt.tune_kernel("vector_add", VECTOR_ADD, 512, args, {"block_size_x": [32, 64, 128]})
    lines = printed.getvalue().splitlines()
    per_config = [line for line in lines if line.startswith("block_size_x=") and "[" in line]
    check("one line per configuration, in Kernel Tuner's form",
          len(per_config) == 3 and all("time=" in line and line.endswith("/3]") for line in per_config), lines)
    check("then the best one", "BEST PERFORMING CONFIGURATION FOR OBJECTIVE time:" in lines
          and lines[-1].startswith("block_size_x=64, time="), lines)
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        kt.tune_kernel("vector_add", VECTOR_ADD, 512, args, {"block_size_x": [32, 64]}, quiet=True)
    check("quiet prints nothing", quiet.getvalue() == "", quiet.getvalue())


def test_run_kernel_writes_a_device_array_back_and_refuses_what_kt_lacks():
    args = vector_args(256)
    c = DeviceArray(np.zeros(256, np.float32))
    out = kt.run_kernel("vector_add", VECTOR_ADD, 256, [c] + args[1:], {"block_size_x": 64}, lang="cupy")
    check("the device array itself comes back", out[0] is c, out[0])
    check("with the launch's result written into it", c.sets == 1 and c.host[5] == 5.0, c.host[:8])
    call = lambda **kw: kt.run_kernel("vector_add", VECTOR_ADD, 256, args, {"block_size_x": 64}, **kw)  # noqa: E731
    expect_error(TypeError, ["kt.run_kernel", "texmem_args", "texture"], lambda: call(texmem_args={"t": {}}))
    expect_error(TypeError, ["kt.run_kernel", "lang", "OpenCL"], lambda: call(lang="OpenCL"))
    expect_error(TypeError, ["kt.run_kernel", "kernel_source", "list of files"], lambda: kt.run_kernel(
        "vector_add", ["a.cu", "b.cu"], 256, args, {}))
    expect_error(kt.KtError, ["could not run", "does not compile"], lambda: kt.run_kernel(
        "vector_add", VECTOR_ADD.replace("a[i]", "a[i"), 256, args, {"block_size_x": 64}))


def test_python_kernel_returns_its_outputs_and_keeps_the_device_state():
    from kt.kernelbuilder import PythonKernel

    args = vector_args(100)
    k = PythonKernel("vector_add", VECTOR_ADD, 100, args, {"block_size_x": 32},
                     inputs=[False, True, True, True], outputs=[True, False, False, False])
    result = k(*args)
    check("the outputs, in a list", len(result) == 1 and result[0][3] == 3.0, result)
    check("an argument not marked as input keeps what the launch left", k.state[0][7] == 7.0, k.state[0][:8])
    expect_error(TypeError, ["results_file"], lambda: PythonKernel("vector_add", VECTOR_ADD, 100, args,
                                                                     results_file="x.json"))


def test_a_code_generator_writes_each_configurations_source():
    seen = []

    def generator(params):
        seen.append(dict(params))
        return VECTOR_ADD.replace("block_size_x", str(params["block_size_x"]))

    args = vector_args()
    results, env = kt.tune_kernel("vector_add", generator, 1000, args, {"block_size_x": [32, 64, 128]})
    check("every configuration compiled from its own source", [r["kt_verdict"] for r in results] == ["ok"] * 3, results)
    check("the generator saw each configuration's values",
          {s["block_size_x"] for s in seen} == {32, 64, 128} and all(set(s) == {"block_size_x"} for s in seen), seen)
    check("best as without a generator", env["best_config"]["block_size_x"] == 64, env["best_config"])

    def broken(params):
        if params["block_size_x"] == 128:
            raise KeyError("no template for 128")
        return VECTOR_ADD

    expect_error(KeyError, ["no template for 128"], lambda: kt.tune_kernel(
        "vector_add", broken, 1000, args, {"block_size_x": [32, 128]}))


def test_metrics_are_computed_in_order_for_the_configurations_that_ran():
    args = vector_args()
    metrics = {"GFLOP/s": lambda p: (1000 / 1e9) / (p["time"] / 1e3), "twice": "time * 2"}
    results, env = kt.tune_kernel("vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [32, 64, 2048]},
                                  metrics=metrics)
    for r in results:
        check("a function of the result", abs(r["GFLOP/s"] - 1e-3 / r["time"]) < 1e-12, r)
        check("an expression over its keys", abs(r["twice"] - 2 * r["time"]) < 1e-12, r)
    check("the best has them too", "GFLOP/s" in env["best_config"], env["best_config"])
    expect_error(ValueError, ["metrics", "dict"], lambda: kt.tune_kernel(
        "vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [32]}, metrics=[lambda p: 1]))


def test_a_verify_function_checks_every_configuration_that_ran():
    args = vector_args()
    calls = []

    def verify(answer, outputs, atol=None):
        calls.append((answer, outputs, atol))
        # the fake hands back 0, 1, 2, …: reject one configuration by its launch count
        return len(calls) != 2

    # the answer may have any shape the function reads: Kernel Tuner's reduction example compares a sum
    results, env = kt.tune_kernel("vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [64, 32, 128]},
                                  answer=[np.float32(499500), None, None, None], verify=verify, atol=1e-3)
    check("called once per configuration", len(calls) == 3, len(calls))
    answer, outputs, atol = calls[0]
    check("with the answer as given and atol", answer[0] == np.float32(499500) and answer[1] is None and atol == 1e-3, calls[0])
    check("and only the arrays with an answer", outputs[0].shape == (1000,) and outputs[1:] == [None, None, None], outputs)
    rejected = [r for r in results if "__error__" in r]
    check("the rejected configuration failed", len(rejected) == 1 and rejected[0]["kt_verdict"] == "wrong answer (verify)"
          and "time" not in rejected[0], results)
    check("the best is among those it accepted", env["best_config"] is not None
          and env["best_config"]["block_size_x"] != rejected[0]["block_size_x"], env["best_config"])

    # without `atol` in its signature, and without an answer: every array is handed over
    seen = []
    kt.tune_kernel("vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [64]},
                   verify=lambda answer, outputs: seen.append((answer, outputs)) or True)
    check("no answer: None, every array", seen[0][0] is None and [o is None for o in seen[0][1]] == [False] * 3 + [True], seen)
    expect_error(ZeroDivisionError, [], lambda: kt.tune_kernel(
        "vector_add", VECTOR_ADD, 1000, args, {"block_size_x": [64]}, verify=lambda a, o: 1 / 0))


def test_kernel_tuner_arguments_the_examples_pass():
    args = vector_args(512)
    # parallel: accepted (one GPU, compiled on every core); cupy arrays as arguments and answer
    c = DeviceArray(np.zeros(512, np.float32))
    results, _ = kt.tune_kernel("vector_add", VECTOR_ADD, 512, [c] + args[1:], {"block_size_x": [32, 64]},
                                answer=[DeviceArray(args[1] + args[2]), None, None, None], parallel=True,
                                lang="Cupy")
    check("cupy-like arguments tuned", [r["kt_verdict"] for r in results] == ["ok", "ok"], results)
    check("the caller's device array is left alone", c.sets == 0 and not c.host.any())
    # Kernel Tuner's loop_unroll_factor convention compiles with 0 (no pragma) and a factor (a constexpr)
    x = np.ones(1000, np.float32)
    results, _ = kt.tune_kernel("sum_floats", UNROLLED, 1, [np.zeros(1024, np.float32), x, np.int32(1000)],
                                {"block_size_x": [32], "loop_unroll_factor_0": [0, 1, 8]}, grid_div_x=[])
    check("loop_unroll_factor_0 0, 1, 8 compile", [r["kt_verdict"] for r in results] == ["ok"] * 3, results)
    check("results and env are JSON", json.dumps(kt.tune_kernel("vector_add", VECTOR_ADD, 512, args,
                                                                {"block_size_x": [64]})) is not None)
    expect_error(TypeError, ["observers", "time only"], lambda: kt.tune_kernel(
        "vector_add", VECTOR_ADD, 512, args, {"block_size_x": [64]}, observers=[object()]))


def test_util_picks_and_prints_as_kernel_tuner():
    results = [
        {"block_size_x": 32, "time": 2.0},
        {"block_size_x": 64, "__error__": "CompilationFailedConfig"},
        {"block_size_x": 128, "time": 1.5, "GFLOP/s": 9.0},
        {"block_size_x": 256, "time": 3.0, "GFLOP/s": 12.5},
    ]
    check("lowest time", kt.util.get_best_config(results, "time")["block_size_x"] == 128)
    check("highest metric", kt.util.get_best_config(results, "GFLOP/s", True)["block_size_x"] == 256)
    text = kt.util.get_config_string(results[3], ["block_size_x", "time"], {"time": "ms"})
    check("name=value, floats to three decimals, units", text == "block_size_x=256, time=3.000ms", text)
    check("every key without keys", kt.util.get_config_string({"a": 1, "b": 0.12345}) == "a=1, b=0.123")


def test_file_utils_write_kernel_tuners_t4_files():
    from kt.file_utils import store_metadata_file, store_output_file

    args = vector_args()
    tune_params = {"block_size_x": [32, 64, 2048]}
    results, _ = kt.tune_kernel("vector_add", VECTOR_ADD, 1000, args, tune_params, metrics={"GB/s": "1 / time"})
    results.append({"block_size_x": 96, "__error__": "RuntimeFailedConfig", "kt_verdict": "wrong answer",
                    "compile_time": 1.0, "benchmark_time": 0, "verification_time": 0, "strategy_time": 0,
                    "framework_time": 0})
    with tempfile.TemporaryDirectory() as d:
        store_output_file(os.path.join(d, "out", "vector_add"), results, tune_params)
        store_metadata_file(os.path.join(d, "meta.json"))
        with open(os.path.join(d, "out", "vector_add.json")) as f:
            doc = json.load(f)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
    check("T4 results header", doc["schema_version"] == "1.0.0" and doc["metadata"] == {"timeunit": "milliseconds"}, doc)
    first = doc["results"][0]
    check("T4 entry keys", set(first) == {"timestamp", "configuration", "times", "invalidity", "correctness",
                                          "measurements", "objectives"}, first)
    check("configuration", first["configuration"] == {"block_size_x": 32}, first)
    check("times", set(first["times"]) == {"compilation", "benchmark", "framework", "search_algorithm",
                                           "validation", "runtimes"} and first["times"]["runtimes"], first["times"])
    names = [m["name"] for m in first["measurements"]]
    check("measurements: time and metrics, no kt extras", names == ["time", "GB/s"], names)
    check("time in ms", first["measurements"][0]["unit"] == "ms", first["measurements"])
    check("correct", first["invalidity"] == "correct" and first["correctness"] == 1 and first["objectives"] == ["time"])
    wrong = doc["results"][-1]
    check("a wrong answer is T4's correctness", wrong["invalidity"] == "correctness" and wrong["correctness"] == 0, wrong)
    check("T4 metadata", meta["schema_version"] == "1.0.0" and {"hardware", "environment", "operating_system"}
          <= set(meta["metadata"]), meta)
    check("kt among the requirements", any(r.startswith("kt==") for r in meta["metadata"]["environment"]["requirements"]), meta)


def test_strategies_observers_accuracy_and_energy_say_what_kt_has():
    check("kt's strategies by name", kt.strategies.greedy_ils == "greedy_ils")
    expect_error(AttributeError, ["no strategy `minimize`", "brute_force", "genetic_algorithm"],
                 lambda: kt.strategies.minimize)
    from kt.accuracy import AccuracyObserver, TunablePrecision
    from kt.energy import energy
    from kt.observers.ncu import NCUObserver
    from kt.observers.nvml import NVMLObserver, get_nvml_gr_clocks
    from kt.observers.pmt import PMTObserver
    from kt.observers.tegra import TegraObserver

    for make in (lambda: NVMLObserver(["nvml_energy"]), lambda: NCUObserver(metrics=[]),
                 lambda: PMTObserver([("nvidia", 0)]), lambda: TegraObserver(["core_freq"]),
                 lambda: get_nvml_gr_clocks(0)):
        expect_error(NotImplementedError, ["kt has no kernel_tuner.observers", "time only"], make)
    expect_error(NotImplementedError, ["TunablePrecision", "dtype"], lambda: TunablePrecision("t", np.zeros(3)))
    expect_error(NotImplementedError, ["AccuracyObserver"], lambda: AccuracyObserver("RMSE"))
    expect_error(NotImplementedError, ["energy", "clocks"], lambda: energy.create_power_frequency_model)


def main():
    if os.environ.get("KT_TUNER_FAKE_WORKER") != "ok":
        sys.exit("set KT_TUNER_FAKE_WORKER=ok: these tests run on kt's fake device (tests/run.sh does)")
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    for t in tests:
        t()
        print(f"ok  {t.__name__}")
    print(f"{len(tests)} Kernel Tuner API tests passed")


if __name__ == "__main__":
    main()
