"""kt.tune_kernel called the way Kernel Tuner's documentation calls tune_kernel, on kt's fake device
(KT_TUNER_FAKE_WORKER=ok: NVRTC compiles every configuration for real, the fake worker "launches" it in
|block_size_x - 64| / 64 + 1 ms). Plain Python, no pytest: run by tests/run.sh, which builds and installs the
package first. Each check prints its name; the first failure stops the run with a traceback."""

import itertools
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

# a 2-D kernel whose threads each compute tile_size_y rows: the grid in y divides by both
MATMUL = """
__global__ void matmul(float *C, float *A, float *B, int n) {
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int y0 = (blockIdx.y * block_size_y + threadIdx.y) * tile_size_y;
    for (int t = 0; t < tile_size_y; t++) {
        int y = y0 + t;
        if (x < n && y < n) {
            float sum = 0.0f;
            for (int k = 0; k < n; k++) sum += A[y * n + k] * B[k * n + x];
            C[y * n + x] = sum;
        }
    }
}
"""

SCALE = """
__global__ void scale(float *out, const float *in, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) out[i] = (float)((VALUE_T)in[i] * (VALUE_T)factor);
}
"""

# block sizes under the script's own names: `bx` tuned, `by` left at its default (1), both #defined
NAMED_BLOCKS = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = (blockIdx.x * bx + threadIdx.x) * by;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

# a 1-D filter read from constant memory (Kernel Tuner's convolution example keeps its filter there too)
SMOOTH = """
#define TAPS 5
__constant__ float taps[TAPS];
__global__ void smooth(float *out, const float *in, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        float sum = 0.0f;
        for (int k = 0; k < TAPS; k++) sum += taps[k] * in[i + k];
        out[i] = sum;
    }
}
"""

RESULT_KEYS = {"time", "times", "compile_time", "benchmark_time", "kt_verdict", "kt_objective_ms"}


def vector_args(n=10000):
    size = np.int32(n)
    a = np.random.randn(n).astype(np.float32)
    b = np.random.randn(n).astype(np.float32)
    c = np.zeros_like(a)
    return [c, a, b, size], a + b


def test_vector_add_returns_kernel_tuners_shapes():
    args, answer = vector_args()
    tune_params = {"block_size_x": [32, 64, 128, 256]}
    results, env = kt.tune_kernel(
        "vector_add", VECTOR_ADD, args[-1], args, tune_params,
        restrictions=["block_size_x > 32"], answer=[answer, None, None, None], atol=1e-5,
    )
    check("one result per configuration after restrictions", len(results) == 3, results)
    for r in results:
        check("result keys", RESULT_KEYS <= set(r), sorted(r))
        check("time is a float in ms", isinstance(r["time"], float) and r["time"] > 0, r)
        check("times is a list of floats", all(isinstance(t, float) for t in r["times"]), r)
        check("parameter values stay ints", isinstance(r["block_size_x"], int), r)
        check("verdict", r["kt_verdict"] == "ok", r)
    check("restriction applied", all(r["block_size_x"] > 32 for r in results))
    check("env names the device", env["device_name"] == "fake", env)
    check("best is the fake's fastest", env["best_config"]["block_size_x"] == 64, env["best_config"])
    check("verified against the answer", env["kt_verified"] is True, env)


def test_a_2d_kernel_with_grid_div_and_a_lambda_restriction():
    n = 64
    A = np.random.randn(n * n).astype(np.float32)
    B = np.random.randn(n * n).astype(np.float32)
    C = np.zeros_like(A)
    tune_params = {"block_size_x": [16, 32, 64], "block_size_y": [1, 2, 4], "tile_size_y": [1, 2]}
    restrict = lambda p: p["block_size_x"] * p["block_size_y"] >= 64  # noqa: E731
    results, env = kt.tune_kernel(
        "matmul", MATMUL, (n, n), [C, A, B, np.int32(n)], tune_params,
        grid_div_y=["block_size_y", "tile_size_y"], restrictions=[restrict],
    )
    space = [dict(zip(tune_params, v)) for v in itertools.product(*tune_params.values())]
    wanted = [c for c in space if restrict(c)]
    got = [{k: r[k] for k in tune_params} for r in results]
    check("the lambda keeps exactly the configurations it allows", sorted(map(str, got)) == sorted(map(str, wanted)), got)
    check("not verified without an answer", env["kt_verified"] is False, env)
    # Kernel Tuner's newer style: a function of the parameters it names
    results, _ = kt.tune_kernel(
        "matmul", MATMUL, (n, n), [C, A, B, np.int32(n)], tune_params,
        grid_div_y=["block_size_y", "tile_size_y"],
        restrictions=[lambda block_size_x, tile_size_y: block_size_x == 32 and tile_size_y == 2],
    )
    check("named-argument restriction", len(results) == 3 and all(r["tile_size_y"] == 2 for r in results), results)


def test_float_and_string_parameters():
    n = 1000
    x = np.random.randn(n).astype(np.float32)
    out = np.zeros_like(x)
    tune_params = {"block_size_x": [64, 128], "factor": [0.5, 2.0], "VALUE_T": ["float", "double"]}
    results, env = kt.tune_kernel(
        "scale", SCALE, n, [out, x, np.int32(n)], tune_params,
        restrictions="factor > 1 or VALUE_T == 'float'",
    )
    check("six configurations after the restriction", len(results) == 6, results)
    check("floats stay floats", all(isinstance(r["factor"], float) for r in results), results)
    check("strings stay strings", {r["VALUE_T"] for r in results} == {"float", "double"}, results)
    check("the restriction on a string", not any(r["factor"] == 0.5 and r["VALUE_T"] == "double" for r in results))
    check("every one compiled and ran", all(r["kt_verdict"] == "ok" for r in results), results)


def test_answer_with_atol_and_the_cache_file():
    args, answer = vector_args(4096)
    with tempfile.TemporaryDirectory() as d:
        cache = os.path.join(d, "vector_add_cache")
        kt.tune_kernel(
            "vector_add", VECTOR_ADD, args[-1], args, {"block_size_x": [64, 128]},
            answer=[answer, None, None, None], atol=1e-3, cache=cache, strategy="brute_force",
        )
        with open(cache + ".json", encoding="utf-8") as f:
            doc = json.load(f)
        check("Kernel Tuner's cache keys", set(doc["cache"]) == {"64", "128"}, list(doc["cache"]))
        check("cache names the device", doc["device_name"] == "fake", doc["device_name"])


def test_block_size_names_name_the_block_parameters():
    args, answer = vector_args(1000)
    results, env = kt.tune_kernel(
        "vector_add", NAMED_BLOCKS, args[-1], args, {"bx": [32, 64, 128, 2048]},
        block_size_names=["bx", "by"], answer=[answer, None, None, None],
    )
    # the fake device's time follows the launch's block x: only the named parameter can set it to 64
    check("best block is bx=64", env["best_config"]["bx"] == 64, env["best_config"])
    check("bx above the device's 1024 threads is left out", sorted(r["bx"] for r in results) == [32, 64, 128], results)
    check("every one compiled with bx and by defined", all(r["kt_verdict"] == "ok" for r in results), results)
    expect_error(ValueError, ["`bx` sets the block size"], lambda: kt.tune_kernel(
        "vector_add", NAMED_BLOCKS, args[-1], args, {"bx": [32.5]}, block_size_names=["bx", "by"]))


def test_unsupported_arguments_are_refused_by_name():
    args, answer = vector_args(256)
    call = lambda **kw: kt.tune_kernel("vector_add", VECTOR_ADD, 256, args, {"block_size_x": [32, 64]}, **kw)  # noqa: E731
    expect_error(TypeError, ["smem_args", "not supported"], lambda: call(smem_args={"x": 1}))
    expect_error(TypeError, ["verify", "function"], lambda: call(verify=True))
    expect_error(TypeError, ["lang"], lambda: call(lang="OpenCL"))
    expect_error(TypeError, ["observers"], lambda: call(observers=[object()]))
    expect_error(ValueError, ["block_size_names", "list"], lambda: call(block_size_names="bx"))
    expect_error(ValueError, ["at most three"], lambda: call(block_size_names=["a", "b", "c", "d"]))
    expect_error(TypeError, ["fraction"], lambda: call(strategy="random_sample", strategy_options={"fraction": 0.1}))
    expect_error(ValueError, ["bayes_opt"], lambda: call(strategy="bayes_opt"))
    expect_error(ValueError, ["answer"], lambda: call(answer=[answer]))
    expect_error(TypeError, ["argument 3", "np.int32"], lambda: kt.tune_kernel(
        "vector_add", VECTOR_ADD, 256, args[:3] + [256], {"block_size_x": [32]}))
    expect_error(ValueError, ["block_size_x", "integers"], lambda: kt.tune_kernel(
        "vector_add", VECTOR_ADD, 256, args, {"block_size_x": [32.0, 64.0]}))


def test_cmem_args_fill_constant_memory_as_in_kernel_tuner():
    n = 1000
    data = np.random.randn(n + 4).astype(np.float32)
    taps = np.array([0.1, 0.2, 0.4, 0.2, 0.1], dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    answer = np.convolve(data, taps[::-1], mode="valid").astype(np.float32)
    args = [out, data, np.int32(n)]
    results, env = kt.tune_kernel(
        "smooth", SMOOTH, n, args, {"block_size_x": [32, 64]},
        cmem_args={"taps": taps}, answer=[answer, None, None], atol=1e-5,
    )
    check("cmem_args accepted: one result per configuration", len(results) == 2, results)
    check("every configuration ok", all(r["kt_verdict"] == "ok" for r in results), results)
    call = lambda cmem: kt.tune_kernel("smooth", SMOOTH, n, args, {"block_size_x": [32]}, cmem_args=cmem)  # noqa: E731
    expect_error(TypeError, ["cmem_args", "dict"], lambda: call([taps]))
    expect_error(TypeError, ["cmem_args['taps']", "numpy array"], lambda: call({"taps": [0.1, 0.2]}))
    expect_error(ValueError, ["cmem_args names `weights`", "declares: taps"], lambda: call({"weights": taps}))


def test_a_failing_restriction_function_raises_its_own_error():
    args, _ = vector_args(256)

    def broken(p):
        raise KeyError("no_such_param")

    expect_error(KeyError, ["no_such_param"], lambda: kt.tune_kernel(
        "vector_add", VECTOR_ADD, 256, args, {"block_size_x": [32, 64]}, restrictions=broken))


def test_slow_configurations_lose_the_race_and_the_efficiency_is_reported():
    """Issue 47: on the fake device a launch takes |block_size_x - 64| / 64 + 1 ms, so 256 and 512 are 4x and
    8x slower than 64 (measured first): one launch each shows it."""
    args, answer = vector_args()
    results, env = kt.tune_kernel(
        "vector_add", VECTOR_ADD, args[-1], args, {"block_size_x": [64, 256, 512, 72]},
        answer=[answer, None, None, None], atol=1e-5,
    )
    by_block = {r["block_size_x"]: r for r in results}
    best = by_block[64]
    check("the best is sampled to kt's standard", len(best["times"]) >= 3 and "kt_aborted_early" not in best, best)
    for slow in (256, 512):
        r = by_block[slow]
        evidence = r.get("kt_aborted_early")
        check(f"{slow}: stopped after one launch with its evidence", evidence and evidence["samples"] == 1
              and len(r["times"]) == 1 and evidence["fastest_ms"] > evidence["bound_ms"] >= evidence["best_ms"], r)
    close = by_block[72]  # 12.5 % slower than 64 on one launch: inside the one-sample bound, out on the second
    check("a close contender gets a second launch", len(close["times"]) >= 2, close)
    e = env.get("kt_tuning_efficiency") or {}
    check("tuning efficiency: needed <= spent GPU time, ratio of needed to wall",
          0 < e.get("needed_gpu_ms", 0) <= e.get("spent_gpu_ms", 0)
          and abs(e["efficiency"] - e["needed_gpu_ms"] / e["wall_ms"]) < 1e-9, e)


def test_without_a_gpu_a_kt_error_says_a_gpu_is_needed_before_nvrtc():
    """Issue 49: without a GPU the call asked for NVRTC first and raised a plain RuntimeError."""
    if os.environ.get("KT_GPU") == "1":
        return "skipped: KT_GPU=1 (it is about a machine without a GPU)"
    args, _ = vector_args(256)
    fake = os.environ.pop("KT_TUNER_FAKE_WORKER")
    try:
        e = expect_error(kt.KtError, ["needs a CUDA GPU", "kt doctor"], lambda: kt.tune_kernel(
            "vector_add", VECTOR_ADD, 256, args, {"block_size_x": [32, 64]}))
    finally:
        os.environ["KT_TUNER_FAKE_WORKER"] = fake
    check("the GPU is what it names first", str(e).startswith("kt.tune_kernel needs a CUDA GPU"), str(e))
    check("KtError is a RuntimeError", isinstance(e, RuntimeError), type(e).__mro__)


def main():
    if os.environ.get("KT_TUNER_FAKE_WORKER") != "ok":
        sys.exit("set KT_TUNER_FAKE_WORKER=ok: these tests run on kt's fake device (tests/run.sh does)")
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    for t in tests:
        skipped = t()
        print(f"{skipped or 'ok'}  {t.__name__}")
    print(f"{len(tests)} kt.tune_kernel tests passed")


if __name__ == "__main__":
    main()
