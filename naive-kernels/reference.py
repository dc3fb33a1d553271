#!/usr/bin/env python3
"""Reference implementations and checker for the kt naive-kernels suite.

Every kernel in this folder is a pair NAME.cu (one plain __global__ kernel, C++ linkage) and NAME.toml (its
sidecar: sizes, input distributions, dtypes, element counts, flops/bytes formulas, tolerances).
This script holds one numpy reference per kernel and three modes:

  --cpu   (default)  validate every sidecar against its kernel's signature, then run each numpy
                     reference at the sidecar's `test` size on random inputs and check shapes,
                     dtypes, finiteness and a few kernel-specific invariants. Needs only numpy.
  --gpu              compile each .cu with cupy.RawModule (NVRTC, the kernel found through its name expression), run it at the `test` size and
                     compare against the numpy reference with the sidecar's tolerances, then time it
                     at the `bench` size with CUDA events (warm-up, median of --reps runs). One line
                     per kernel, then "N passed, N failed". A failing kernel does not stop the run.
  --emulate          compile each .cu as plain C++ with g++ (a tiny CUDA shim runs the grid serially)
                     and compare it against the numpy reference at `test` size. Catches kernel logic
                     and syntax errors on a machine without a GPU (not NVRTC-specific problems).
                     Kernels calling __syncthreads run each block's threads as std::threads.

Options: --only NAME[,NAME...] restricts to some kernels (file stem or kernel name); --no-bench skips
the bench-size timing in --gpu mode; --reps N sets timed repetitions (default 7).

Conventions the sidecars follow (see README.md for the full field reference):
  * a TOML integer in bench/test is passed as the kernel's scalar type (int), a TOML float as float;
    the .cu signature decides the final C type;
  * expressions use + - * / ( ), integers, parameter names, block_size_x/y/z and min, max, ceil_div;
    `/` between integers is integer division;
  * "randint:LO:HI" draws integers in [LO, HI) (HI exclusive, numpy convention);
  * dtype "float32x3" is an array of float3 structs; its `sizes` entry counts structs.
"""

from __future__ import annotations

import argparse
import ast
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np

try:
    import tomllib
except ModuleNotFoundError:  # python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-5

DTYPES = {
    "float32": (np.float32, 1),
    "float32x3": (np.float32, 3),
    "int32": (np.int32, 1),
    "uint32": (np.uint32, 1),
    "uint8": (np.uint8, 1),
}

KNOWN_FIELDS = {
    "kernel", "description", "problem_size", "outputs", "default_block", "bench", "test", "inputs",
    "dtypes", "sizes", "flops", "bytes", "shared_mem", "grid", "outputs_size_note", "rtol", "atol",
    "max_mismatch_fraction",
}
BLOCK_NAMES = ("block_size_x", "block_size_y", "block_size_z")


# ----------------------------------------------------------------------------------------------
# Sidecar loading, signature parsing, expression evaluation
# ----------------------------------------------------------------------------------------------

class Param:
    def __init__(self, name: str, ctype: str, is_ptr: bool):
        self.name, self.ctype, self.is_ptr = name, ctype, is_ptr

    def __repr__(self) -> str:
        return f"{self.ctype}{'*' if self.is_ptr else ''} {self.name}"


def strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


def parse_signature(src: str, kernel: str) -> list[Param]:
    code = strip_comments(src)
    m = re.search(r"__global__\s+void\s+" + re.escape(kernel) + r"\s*\(([^)]*)\)", code)
    if not m:
        raise ValueError(f"no __global__ void {kernel}(...) in source")
    params = []
    for raw in m.group(1).split(","):
        decl = " ".join(raw.split())
        if not decl:
            continue
        nm = re.search(r"([A-Za-z_]\w*)\s*$", decl)
        if not nm:
            raise ValueError(f"cannot parse parameter {raw!r}")
        name = nm.group(1)
        head = decl[: nm.start()]
        is_ptr = "*" in head
        ctype = " ".join(w for w in head.replace("*", " ").split()
                         if w not in ("const", "__restrict__", "restrict", "volatile"))
        params.append(Param(name, ctype, is_ptr))
    return params


def ceil_div(a, b):
    return -(-a // b)


def eval_expr(expr, env: dict):
    """Evaluate a sidecar expression with + - * / ( ), numbers, names, min, max, ceil_div."""
    if isinstance(expr, (int, float)):
        return expr
    tree = ast.parse(str(expr), mode="eval")
    funcs = {"min": min, "max": max, "ceil_div": ceil_div}

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise KeyError(f"unknown name {node.id!r} in expression {expr!r}")
            return env[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(a, int) and isinstance(b, int):
                return int(a / b) if (a < 0) != (b < 0) else a // b  # truncating, like evalexpr
            return a / b
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in funcs:
            return funcs[node.func.id](*[ev(a) for a in node.args])
        raise ValueError(f"unsupported syntax in expression {expr!r}: {ast.dump(node)[:80]}")

    return ev(tree)


def expr_names(expr) -> set[str]:
    if isinstance(expr, (int, float)):
        return set()
    tree = ast.parse(str(expr), mode="eval")
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            names.discard(node.func.id)
    return names - {"min", "max", "ceil_div"}


class Kernel:
    def __init__(self, stem: str):
        self.stem = stem
        with open(os.path.join(HERE, stem + ".toml"), "rb") as f:
            self.meta = tomllib.load(f)
        with open(os.path.join(HERE, stem + ".cu")) as f:
            self.src = f.read()
        self.name = self.meta["kernel"]
        self.params = parse_signature(self.src, self.name)
        self.pointers = [p for p in self.params if p.is_ptr]
        self.scalars = [p for p in self.params if not p.is_ptr]
        self.block = tuple(int(b) for b in (list(self.meta["default_block"]) + [1, 1, 1])[:3])

    def env(self, sizes: dict, block=None) -> dict:
        block = block or self.block
        env = dict(sizes)
        env.update(dict(zip(BLOCK_NAMES, block)))
        return env

    def validate(self) -> list[str]:
        """Every sidecar name is a kernel parameter, every parameter is covered."""
        m, problems = self.meta, []
        pnames = {p.name for p in self.params}
        ptrs = {p.name for p in self.pointers}
        scal = {p.name for p in self.scalars}
        allowed_expr = pnames | set(BLOCK_NAMES)
        for key in m:
            if key not in KNOWN_FIELDS:
                problems.append(f"unknown field {key!r}")
        for key in ("kernel", "problem_size", "outputs", "default_block", "bench", "inputs", "dtypes",
                    "sizes", "flops", "bytes"):
            if key not in m:
                problems.append(f"missing field {key!r}")
        for sec in ("bench", "test"):
            tbl = m.get(sec, {})
            for k in tbl:
                if k not in scal:
                    problems.append(f"{sec}.{k} is not a scalar parameter")
            for s in scal:
                if s not in tbl:
                    problems.append(f"{sec} lacks scalar parameter {s!r}")
        for sec in ("inputs", "dtypes", "sizes"):
            tbl = m.get(sec, {})
            for k in tbl:
                if k not in ptrs:
                    problems.append(f"{sec}.{k} is not a pointer parameter")
            for p in ptrs:
                if p not in tbl:
                    problems.append(f"{sec} lacks pointer parameter {p!r}")
        for sec in ("rtol", "atol", "max_mismatch_fraction"):
            for k in m.get(sec, {}):
                if k not in m.get("outputs", []):
                    problems.append(f"{sec}.{k} is not an output")
        for o in m.get("outputs", []):
            if o not in ptrs:
                problems.append(f"output {o!r} is not a pointer parameter")
        for dist in m.get("inputs", {}).values():
            if not (dist in ("randn", "rand", "zeros", "ones") or re.fullmatch(r"randint:-?\d+:-?\d+", dist)):
                problems.append(f"unknown distribution {dist!r}")
        for dt in m.get("dtypes", {}).values():
            if dt not in DTYPES:
                problems.append(f"unknown dtype {dt!r}")
        exprs = list(m.get("problem_size", [])) + list(m.get("sizes", {}).values()) + list(m.get("grid", []))
        exprs += [m.get(k) for k in ("flops", "bytes", "shared_mem") if k in m]
        for e in exprs:
            try:
                bad = expr_names(e) - allowed_expr
            except SyntaxError as err:
                problems.append(f"expression {e!r} does not parse: {err}")
                continue
            if bad:
                problems.append(f"expression {e!r} uses unknown names {sorted(bad)}")
        for sec in ("bench", "test"):
            if sec in m and not problems:
                env = self.env(m[sec])
                for e in exprs:
                    try:
                        eval_expr(e, env)
                    except Exception as err:  # noqa: BLE001 - report, do not crash
                        problems.append(f"{sec}: expression {e!r} fails: {err}")
        return problems

    def scalar_value(self, p: Param, v):
        if p.ctype in ("float",):
            return np.float32(v)
        if p.ctype in ("double",):
            return np.float64(v)
        if p.ctype in ("unsigned int", "unsigned"):
            return np.uint32(v)
        if p.ctype in ("long long", "long"):
            return np.int64(v)
        return np.int32(v)

    def host_inputs(self, sizes: dict, rng: np.random.Generator, block=None) -> dict:
        env = self.env(sizes, block)
        arrays = {}
        for p in self.pointers:
            dt, comps = DTYPES[self.meta["dtypes"][p.name]]
            count = int(eval_expr(self.meta["sizes"][p.name], env)) * comps
            arrays[p.name] = make_host_array(self.meta["inputs"][p.name], count, dt, rng)
        return arrays


def make_host_array(dist: str, count: int, dt, rng: np.random.Generator) -> np.ndarray:
    if dist == "zeros":
        return np.zeros(count, dt)
    if dist == "ones":
        return np.ones(count, dt)
    if dist == "randn":
        return rng.standard_normal(count, dtype=np.float32).astype(dt)
    if dist == "rand":
        return rng.random(count, dtype=np.float32).astype(dt)
    if dist.startswith("randint:"):
        _, lo, hi = dist.split(":")
        return rng.integers(int(lo), int(hi), count).astype(dt)
    raise ValueError(f"unknown distribution {dist!r}")


def make_device_array(cp, dist: str, count: int, dt, seed: int):
    rs = cp.random.RandomState(seed)
    if dist == "zeros":
        return cp.zeros(count, dt)
    if dist == "ones":
        return cp.ones(count, dt)
    if dist == "randn":
        return rs.standard_normal(count, dtype=cp.float32).astype(dt, copy=False)
    if dist == "rand":
        return rs.random_sample(count, dtype=cp.float32).astype(dt, copy=False)
    if dist.startswith("randint:"):
        _, lo, hi = dist.split(":")
        return rs.randint(int(lo), int(hi), size=count, dtype=np.int32).astype(dt, copy=False)
    raise ValueError(f"unknown distribution {dist!r}")


# ----------------------------------------------------------------------------------------------
# numpy references: f(arrays, scalars, block) -> {output name: flat array of the buffer's dtype}
# arrays are the flat host inputs (before the kernel ran), scalars the bench/test table.
# ----------------------------------------------------------------------------------------------

f64 = np.float64


def ref_matrixAdd(a, s, block):
    return {"C": (a["A"].astype(f64) + a["B"]).astype(np.float32)}


def ref_matrixMultiply(a, s, block):
    A = a["A"].astype(f64).reshape(s["A_height"], s["A_width"])
    B = a["B"].astype(f64).reshape(s["A_width"], s["B_width"])
    return {"C": (A @ B).astype(np.float32).ravel()}


def ref_matrixTranspose(a, s, block):
    return {"out": a["in"].reshape(s["height"], s["width"]).T.copy().ravel()}


def ref_sigmoidActivation(a, s, block):
    return {"out": (1.0 / (1.0 + np.exp(-a["in"].astype(f64)))).astype(np.float32)}


def ref_assign_clusters(a, s, block):
    P = a["data_points"].astype(f64).reshape(s["num_points"], s["dims"])
    C = a["centroids"].astype(f64).reshape(s["num_clusters"], s["dims"])
    d = ((P[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    return {"labels": np.argmin(d, axis=1).astype(np.int32)}


def ref_mandelbrot(a, s, block):
    # Emulates the kernel's float32 arithmetic (without FMA contraction).
    f = np.float32
    w, h = s["width"], s["height"]
    sx = (f(s["x_max"]) - f(s["x_min"])) / f(w)
    sy = (f(s["y_max"]) - f(s["y_min"])) / f(h)
    cx = (f(s["x_min"]) + np.arange(w, dtype=f) * sx)[None, :].repeat(h, 0)
    cy = (f(s["y_min"]) + np.arange(h, dtype=f) * sy)[:, None].repeat(w, 1)
    zx = np.zeros((h, w), f)
    zy = np.zeros((h, w), f)
    it = np.zeros((h, w), np.int32)
    active = np.ones((h, w), bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(int(s["max_iter"])):
            active &= (zx * zx + zy * zy) <= f(4.0)
            if not active.any():
                break
            tmp = zx * zx - zy * zy + cx
            nzy = f(2.0) * zx * zy + cy
            zx = np.where(active, tmp, zx)
            zy = np.where(active, nzy, zy)
            it += active
    return {"output": it.ravel()}


def ref_game_of_life(a, s, block):
    g = a["current_grid"].reshape(s["height"], s["width"])
    n = sum(np.roll(np.roll(g, dy, 0), dx, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dx, dy) != (0, 0))
    nxt = ((n == 3) | ((g != 0) & (n == 2))).astype(np.int32)
    return {"next_grid": nxt.ravel()}


def ref_verlet_integration(a, s, block):
    dt = f64(np.float32(s["dt"]))
    p, v, acc = (a[k].astype(f64) for k in ("positions", "velocities", "accelerations"))
    return {
        "positions": (p + v * dt + 0.5 * acc * dt * dt).astype(np.float32),
        "velocities": (v + acc * dt).astype(np.float32),
    }


def ref_reduce_sum(a, s, block):
    n, bs = s["n"], block[0]
    nb = ceil_div(n, bs)
    x = np.zeros(nb * bs, f64)
    x[:n] = a["input"]
    return {"output": x.reshape(nb, bs).sum(axis=1).astype(np.float32)}


def ref_layernorm_forward(a, s, block):
    N, C = s["N"], s["C"]
    x = a["inp"].astype(f64).reshape(N, C)
    m = x.mean(axis=1)
    var = ((x - m[:, None]) ** 2).mean(axis=1)
    r = 1.0 / np.sqrt(var + 1e-5)
    out = (x - m[:, None]) * r[:, None] * a["weight"].astype(f64)[None, :] + a["bias"].astype(f64)[None, :]
    return {"out": out.astype(np.float32).ravel(), "mean": m.astype(np.float32), "rstd": r.astype(np.float32)}


def ref_softmax_forward(a, s, block):
    x = a["inp"].astype(f64).reshape(s["rows"], s["cols"])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": (e / e.sum(axis=1, keepdims=True)).astype(np.float32).ravel()}


def ref_gelu_forward(a, s, block):
    x = a["inp"].astype(f64)
    y = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return {"out": y.astype(np.float32)}


def ref_residual_forward(a, s, block):
    return {"out": (a["inp1"].astype(f64) + a["inp2"]).astype(np.float32)}


def ref_histogram(a, s, block):
    return {"bins": np.bincount(a["data"], minlength=256).astype(np.uint32)}


def ref_prefix_sum(a, s, block):
    return {"output": np.cumsum(a["input"].astype(f64)).astype(np.float32)}


def ref_conv2d(a, s, block):
    W, H, K = s["width"], s["height"], s["K"]
    r = K // 2
    img = np.zeros((H + 2 * r, W + 2 * r), f64)
    img[r:r + H, r:r + W] = a["input"].reshape(H, W)
    k = a["kernel"].astype(f64).reshape(K, K)
    out = np.zeros((H, W), f64)
    for i in range(K):
        for j in range(K):
            out += k[i, j] * img[i:i + H, j:j + W]
    return {"output": out.astype(np.float32).ravel()}


def ref_vectorAdd(a, s, block):
    return {"c": (a["a"].astype(f64) + a["b"]).astype(np.float32)}


def ref_saxpy(a, s, block):
    return {"y": (f64(np.float32(s["a"])) * a["x"] + a["y"]).astype(np.float32)}


REFERENCES = {name[4:]: fn for name, fn in globals().items() if name.startswith("ref_")}


# Extra CPU self-check invariants (independent of the reference formula where possible).
def _inv_softmax(a, s, out):
    rows = out["out"].reshape(s["rows"], s["cols"]).astype(f64).sum(axis=1)
    assert np.allclose(rows, 1.0, atol=1e-5), "softmax rows must sum to 1"


def _inv_histogram(a, s, out):
    assert int(out["bins"].sum()) == s["n"], "histogram must count every byte"


def _inv_reduce(a, s, out):
    assert np.isclose(out["output"].astype(f64).sum(), a["input"].astype(f64).sum(), rtol=1e-4, atol=1e-3)


def _inv_transpose(a, s, out):
    W, H = s["width"], s["height"]
    y, x = H - 1, W - 1
    assert out["out"][x * H + y] == a["in"][y * W + x]


def _inv_matmul(a, s, out):
    Aw, Ah, Bw = s["A_width"], s["A_height"], s["B_width"]
    r, c = Ah - 1, Bw - 1
    v = sum(f64(a["A"][r * Aw + k]) * a["B"][k * Bw + c] for k in range(Aw))
    assert abs(out["C"][r * Bw + c] - v) < 1e-3


def _inv_layernorm(a, s, out):
    assert np.all(out["rstd"] > 0)


def _inv_prefix(a, s, out):
    assert np.all(np.diff(out["output"]) >= 0), "prefix sums of non-negative inputs must not decrease"


def _inv_mandelbrot(a, s, out):
    o = out["output"]
    assert o.min() >= 1 and o.max() <= s["max_iter"], "counts lie in [1, max_iter]"
    assert o.max() == s["max_iter"], "the test window must contain points of the set"


INVARIANTS = {
    "softmax_forward": _inv_softmax, "histogram": _inv_histogram, "reduce_sum": _inv_reduce,
    "matrixTranspose": _inv_transpose, "matrixMultiply": _inv_matmul, "layernorm_forward": _inv_layernorm,
    "prefix_sum": _inv_prefix, "mandelbrot": _inv_mandelbrot,
}


# ----------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------

def compare(k: Kernel, got: dict, want: dict):
    """Returns (ok, max error description)."""
    ok, worst = True, []
    for o in k.meta["outputs"]:
        g, w = np.asarray(got[o]).ravel(), np.asarray(want[o]).ravel()
        if g.shape != w.shape:
            return False, f"{o}: shape {g.shape} != {w.shape}"
        if np.issubdtype(w.dtype, np.integer):
            bad = int(np.count_nonzero(g != w))
            frac_allowed = float(k.meta.get("max_mismatch_fraction", {}).get(o, 0.0))
            if bad > frac_allowed * g.size:
                ok = False
            worst.append(f"{o}: {bad}/{g.size} differ")
        else:
            rtol = float(k.meta.get("rtol", {}).get(o, DEFAULT_RTOL))
            atol = float(k.meta.get("atol", {}).get(o, DEFAULT_ATOL))
            g64, w64 = g.astype(f64), w.astype(f64)
            err = np.abs(g64 - w64)
            if not np.all(np.isfinite(g64)) or np.any(err > atol + rtol * np.abs(w64)):
                ok = False
            worst.append(f"{o}: {float(np.nanmax(err)) if err.size else 0.0:.3g}")
    return ok, "; ".join(worst)


def select(stems: list[str], only: str | None) -> list[str]:
    if not only:
        return stems
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    out = []
    for s in stems:
        try:
            with open(os.path.join(HERE, s + ".toml"), "rb") as f:
                kname = tomllib.load(f).get("kernel")
        except Exception:  # noqa: BLE001
            kname = None
        if s in wanted or kname in wanted:
            out.append(s)
    return out


def all_stems() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(HERE) if f.endswith(".toml") and os.path.exists(os.path.join(HERE, f[:-5] + ".cu")))


# ----------------------------------------------------------------------------------------------
# --cpu
# ----------------------------------------------------------------------------------------------

def run_cpu(stems: list[str]) -> int:
    passed = failed = 0
    for stem in stems:
        try:
            k = Kernel(stem)
            problems = k.validate()
            if problems:
                raise AssertionError("sidecar: " + "; ".join(problems))
            s = k.meta["test"]
            rng = np.random.default_rng(1234)
            arrays = k.host_inputs(s, rng)
            ref = REFERENCES[k.name]
            out = ref({n: v.copy() for n, v in arrays.items()}, s, k.block)
            assert set(out) == set(k.meta["outputs"]), f"reference returns {sorted(out)}"
            for o, v in out.items():
                buf = arrays[o]
                assert v.shape == buf.shape, f"{o}: shape {v.shape} != buffer {buf.shape}"
                assert v.dtype == buf.dtype, f"{o}: dtype {v.dtype} != buffer {buf.dtype}"
                if np.issubdtype(v.dtype, np.floating):
                    assert np.all(np.isfinite(v)), f"{o}: non-finite values"
            if k.name in INVARIANTS:
                INVARIANTS[k.name](arrays, s, out)
            print(f"{stem:20s} ok    test sizes {s}")
            passed += 1
        except Exception as err:  # noqa: BLE001 - keep going, report per kernel
            print(f"{stem:20s} FAIL  {type(err).__name__}: {err}")
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


# ----------------------------------------------------------------------------------------------
# --gpu (cupy + NVRTC)
# ----------------------------------------------------------------------------------------------

def launch_config(k: Kernel, sizes: dict, block):
    env = k.env(sizes, block)
    if "grid" in k.meta:
        grid = [int(eval_expr(e, env)) for e in k.meta["grid"]]
    else:
        ps = [int(eval_expr(e, env)) for e in k.meta["problem_size"]]
        grid = [ceil_div(p, b) for p, b in zip(ps, block)]
    grid = tuple((grid + [1, 1, 1])[:3])
    smem = int(eval_expr(k.meta["shared_mem"], env)) if "shared_mem" in k.meta else 0
    return grid, smem


def kernel_args(k: Kernel, sizes: dict, dev: dict):
    return tuple(dev[p.name] if p.is_ptr else k.scalar_value(p, sizes[p.name]) for p in k.params)


def run_gpu(stems: list[str], bench: bool, reps: int) -> int:
    try:
        import cupy as cp
    except ImportError:
        print("cupy is not installed: --gpu needs cupy and a CUDA device")
        return 2
    dev_name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    dev_name = dev_name.decode() if isinstance(dev_name, bytes) else dev_name
    print(f"device: {dev_name}; cupy {cp.__version__}; reps {reps}")
    print(f"{'kernel':20s} {'check':5s} {'max error':40s} {'bench ms':>10s} {'GB/s':>9s} {'GFLOP/s':>9s}")
    passed = failed = 0
    for stem in stems:
        status, err_txt, ms_txt, gbs_txt, gfs_txt = "FAIL", "", "-", "-", "-"
        try:
            k = Kernel(stem)
            problems = k.validate()
            if problems:
                raise AssertionError("sidecar: " + "; ".join(problems))
            # plain __global__ kernels have C++ linkage: NVRTC lowers the name through a name expression
            fn = cp.RawModule(code=k.src, name_expressions=[k.name]).get_function(k.name)
            # correctness at test size
            s = k.meta["test"]
            host = k.host_inputs(s, np.random.default_rng(1234))
            dev = {n: cp.asarray(v) for n, v in host.items()}
            grid, smem = launch_config(k, s, k.block)
            fn(grid, k.block, kernel_args(k, s, dev), shared_mem=smem)
            cp.cuda.Device().synchronize()
            got = {o: cp.asnumpy(dev[o]) for o in k.meta["outputs"]}
            want = REFERENCES[k.name]({n: v.copy() for n, v in host.items()}, s, k.block)
            ok, err_txt = compare(k, got, want)
            del dev
            # timing at bench size
            if bench:
                b = k.meta["bench"]
                env = k.env(b)
                dev = {}
                for i, p in enumerate(k.pointers):
                    dt, comps = DTYPES[k.meta["dtypes"][p.name]]
                    count = int(eval_expr(k.meta["sizes"][p.name], env)) * comps
                    dev[p.name] = make_device_array(cp, k.meta["inputs"][p.name], count, dt, 1000 + i)
                grid, smem = launch_config(k, b, k.block)
                args = kernel_args(k, b, dev)
                for _ in range(2):
                    fn(grid, k.block, args, shared_mem=smem)
                cp.cuda.Device().synchronize()
                start, end = cp.cuda.Event(), cp.cuda.Event()
                times = []
                for _ in range(reps):
                    start.record()
                    fn(grid, k.block, args, shared_mem=smem)
                    end.record()
                    end.synchronize()
                    times.append(cp.cuda.get_elapsed_time(start, end))
                med = float(np.median(times))
                nbytes = float(eval_expr(k.meta["bytes"], env))
                nflops = float(eval_expr(k.meta["flops"], env))
                ms_txt = f"{med:.3f}"
                gbs_txt = f"{nbytes / (med * 1e-3) / 1e9:.1f}"
                gfs_txt = f"{nflops / (med * 1e-3) / 1e9:.1f}"
                del dev, args
            status = "ok" if ok else "FAIL"
        except Exception as e:  # noqa: BLE001 - one failing kernel must not stop the suite
            err_txt = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
            status = "FAIL"
            if os.environ.get("KT_REF_TRACE"):
                traceback.print_exc()
        finally:
            dev = args = None  # drop device buffers even when the kernel failed half-way
            try:
                cp.cuda.Device().synchronize()
            except Exception:  # noqa: BLE001 - a sticky CUDA error: report and continue
                pass
            cp.get_default_memory_pool().free_all_blocks()
        if status == "ok":
            passed += 1
        else:
            failed += 1
        print(f"{stem:20s} {status:5s} {err_txt:40s} {ms_txt:>10s} {gbs_txt:>9s} {gfs_txt:>9s}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


# ----------------------------------------------------------------------------------------------
# --emulate (g++: the .cu compiled as C++ with a serial CUDA shim)
# ----------------------------------------------------------------------------------------------

SHIM = r"""
#include <math.h>
#include <algorithm>
#include <barrier>
#include <thread>
#include <vector>
struct dim3 { unsigned int x, y, z; };
struct float3 { float x, y, z; };
static thread_local dim3 threadIdx;
static dim3 blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
static inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { unsigned int o = *p; *p += v; return o; }
static inline int atomicAdd(int* p, int v) { int o = *p; *p += v; return o; }
static inline float atomicAdd(float* p, float v) { float o = *p; *p += v; return o; }
static float g_smem[16384];
static std::barrier<>* g_barrier = nullptr;
static inline void __syncthreads() { g_barrier->arrive_and_wait(); }
"""


def _emulation_source(k: Kernel) -> str:
    """The kernel as C++: blocks run one after another; a block whose kernel calls __syncthreads
    runs its threads as real std::threads meeting at a std::barrier, otherwise threads run serially
    (all sidecar atomics then stay race-free)."""
    code = k.src.replace('extern "C"', "")
    code = re.sub(r"extern\s+__shared__\s+(\w+)\s+(\w+)\s*\[\s*\]\s*;", r"\1* \2 = (\1*)g_smem;", code)
    uses_sync = "__syncthreads" in code
    sig = ", ".join((f"{p.ctype}* {p.name}" if p.is_ptr else f"{p.ctype} {p.name}") for p in k.params)
    call = ", ".join(p.name for p in k.params)
    loop = [
        f'extern "C" void launch(unsigned kt_gx, unsigned kt_gy, unsigned kt_gz, unsigned kt_bx, unsigned kt_by, unsigned kt_bz, {sig}) {{',
        "  gridDim = {kt_gx, kt_gy, kt_gz}; blockDim = {kt_bx, kt_by, kt_bz};",
        "  for (unsigned kt_z = 0; kt_z < kt_gz; ++kt_z) for (unsigned kt_y = 0; kt_y < kt_gy; ++kt_y) for (unsigned kt_x = 0; kt_x < kt_gx; ++kt_x) {",
        "    blockIdx = {kt_x, kt_y, kt_z};",
    ]
    if uses_sync:
        loop += [
            "    std::barrier<> kt_bar((std::ptrdiff_t)(kt_bx * kt_by * kt_bz)); g_barrier = &kt_bar;",
            "    std::vector<std::thread> kt_ts;",
            "    for (unsigned kt_tz = 0; kt_tz < kt_bz; ++kt_tz) for (unsigned kt_ty = 0; kt_ty < kt_by; ++kt_ty) for (unsigned kt_tx = 0; kt_tx < kt_bx; ++kt_tx)",
            f"      kt_ts.emplace_back([=] {{ threadIdx = {{kt_tx, kt_ty, kt_tz}}; {k.name}({call}); }});",
            "    for (auto& kt_t : kt_ts) kt_t.join();",
        ]
    else:
        loop += [
            "    for (unsigned kt_tz = 0; kt_tz < kt_bz; ++kt_tz) for (unsigned kt_ty = 0; kt_ty < kt_by; ++kt_ty) for (unsigned kt_tx = 0; kt_tx < kt_bx; ++kt_tx) {",
            f"      threadIdx = {{kt_tx, kt_ty, kt_tz}}; {k.name}({call});",
            "    }",
        ]
    loop += ["  }", "}"]
    return SHIM + code + "\n" + "\n".join(loop) + "\n"


def run_emulate(stems: list[str]) -> int:
    import ctypes

    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        print("--emulate needs g++")
        return 2
    passed = failed = 0
    tmp = tempfile.mkdtemp(prefix="kt-naive-emu-")
    for stem in stems:
        try:
            k = Kernel(stem)
            problems = k.validate()
            if problems:
                raise AssertionError("sidecar: " + "; ".join(problems))
            src = _emulation_source(k)
            cpp, so = os.path.join(tmp, stem + ".cpp"), os.path.join(tmp, stem + ".so")
            with open(cpp, "w") as f:
                f.write(src)
            r = subprocess.run([cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-ffp-contract=off", "-o", so, cpp],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("g++ failed: " + r.stderr.strip()[:600])
            lib = ctypes.CDLL(so)
            s = k.meta["test"]
            host = k.host_inputs(s, np.random.default_rng(1234))
            work = {n: v.copy() for n, v in host.items()}
            grid, _ = launch_config(k, s, k.block)
            args = [ctypes.c_uint(v) for v in grid + k.block]
            for p in k.params:
                if p.is_ptr:
                    args.append(ctypes.c_void_p(work[p.name].ctypes.data))
                else:
                    v = k.scalar_value(p, s[p.name])
                    args.append(ctypes.c_float(v) if v.dtype == np.float32 else ctypes.c_int(int(v)))
            lib.launch(*args)
            got = {o: work[o] for o in k.meta["outputs"]}
            want = REFERENCES[k.name]({n: v.copy() for n, v in host.items()}, s, k.block)
            ok, err_txt = compare(k, got, want)
            print(f"{stem:20s} {'ok' if ok else 'FAIL':5s} {err_txt}")
            passed += ok
            failed += not ok
        except Exception as err:  # noqa: BLE001
            print(f"{stem:20s} FAIL  {type(err).__name__}: {err}")
            failed += 1
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--cpu", action="store_true", help="numpy references + sidecar validation (default)")
    mode.add_argument("--gpu", action="store_true", help="compile with cupy/NVRTC, check and time")
    mode.add_argument("--emulate", action="store_true", help="compile the .cu as C++ with g++ and check")
    ap.add_argument("--only", help="comma-separated kernel or file names")
    ap.add_argument("--no-bench", action="store_true", help="--gpu: skip bench-size timing")
    ap.add_argument("--reps", type=int, default=7, help="--gpu: timed repetitions (median reported)")
    args = ap.parse_args()
    stems = select(all_stems(), args.only)
    if not stems:
        print("no kernels selected")
        return 2
    if args.gpu:
        return run_gpu(stems, not args.no_bench, max(5, args.reps))
    if args.emulate:
        return run_emulate(stems)
    return run_cpu(stems)


if __name__ == "__main__":
    sys.exit(main())
