#!/usr/bin/env python3
"""kt-tuner against Kernel Tuner on the same GPU, same kernels, same spaces (run by run.sh on the GPU machine).

Wall time is measured around the whole `kt tune` process (start-up, NVRTC, context, inputs, reference launch,
every configuration verified and timed) and around Kernel Tuner's `tune_kernel` call (inputs already in host
memory). Each kt run gets an empty module cache ("cold") unless marked "warm".

Kernel Tuner runs twice per space: its default (`iterations=7`) and its fastest mode on one GPU (`iterations=1`:
one timed launch per configuration after its warm-up; its constraint-aware search-space construction is already
its default in 1.5, and its `parallel` runner needs Ray and one GPU per worker, so on one GPU it is the sequential
runner again). Every kt row prints its tuning efficiency (README.md, crates/kt-record/src/tuning_efficiency.rs: the GPU time the ranking needed over the
tuning's wall time) and how many configurations lost the race. The last table gives the ratios issue 47 asks for.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
NK = ROOT / "naive-kernels"
HERE = Path(__file__).resolve().parent
rows = []  # (benchmark, tool, wall_s, best_config, best_ms, note)
runs = {}  # every kt run's full JSON result, by name (written to results.json)
floors = {}  # benchmark -> GPU seconds that one launch of each configuration takes (gpu_floor)


def log(*a):
    print(*a, flush=True)


def kt(args, kt_bin, out_dir, name):
    t0 = time.perf_counter()
    p = subprocess.run([kt_bin, "tune", *args, "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        log(f"kt {name} failed rc={p.returncode}: {p.stderr[-2000:]}")
        runs[name] = {"error": p.stderr[-4000:], "wall_s": wall}
        return wall, None
    res = json.loads(p.stdout)
    runs[name] = {"wall_s": wall, "result": res}
    return wall, res


def cfg_text(c):
    return " ".join(f"{k}={v}" for k, v in c)


def kt_summary(res):
    b = res.get("best") or {"config": [], "objective": float("nan")}
    bad = {}
    for m in res["measurements"]:
        if m["verdict"]["kind"] != "ok":
            bad[m["verdict"]["kind"]] = bad.get(m["verdict"]["kind"], 0) + 1
    return cfg_text(b["config"]), b["objective"], b.get("gbps"), b.get("percent_of_peak"), bad


def kt_efficiency(res):
    """`eff 62% (needed 1.24 s, spent 1.50 s); 12 raced` from a kt result, or '' when it has none."""
    e = res.get("efficiency") or {}
    raced = sum(1 for m in res["measurements"] if (m.get("timing") or {}).get("aborted_early"))
    if not e:
        return ""
    return (f"eff {100 * e['efficiency']:.0f}% (needed {e['needed_gpu_ms'] / 1e3:.2f} s, spent "
            f"{e['spent_gpu_ms'] / 1e3:.2f} s of {e['wall_ms'] / 1e3:.2f} s); {raced} raced")


BACKENDS = ["cupy", "nvcuda"]  # Kernel Tuner's backends tried in order; the first that starts is kept


def tune_with_a_backend(kernel_tuner, *args, **kwargs):
    """Kernel Tuner's tune_kernel on the first backend that starts here (Kernel Tuner 1.5's cupy backend fails
    to read the device UUID of cupy 14, its nvcuda backend needs cuda-python)."""
    while True:
        try:
            return kernel_tuner.tune_kernel(*args, lang=BACKENDS[0], **kwargs)
        except (ValueError, ImportError) as e:
            if len(BACKENDS) == 1:
                raise
            log(f"Kernel Tuner's {BACKENDS[0]} backend does not start here ({type(e).__name__}: {e}); using {BACKENDS[1]}")
            BACKENDS.pop(0)


def kernel_tuner_modes(bench, name, source, problem, args, params, restrictions, grid_div=None):
    """Kernel Tuner's default and its fastest mode on one GPU on the same space; rows added, best configs returned."""
    import kernel_tuner
    best = {}
    for mode, iterations in [("default", 7), ("iterations=1, after the default run in the same process", 1)]:
        extra = {}
        if grid_div:
            extra = {"grid_div_x": grid_div[0], "grid_div_y": grid_div[1]}
        t0 = time.perf_counter()
        res, env = tune_with_a_backend(kernel_tuner, name, source, problem, args, params, restrictions=restrictions,
                                       verbose=False, quiet=True, iterations=iterations, **extra)
        wall = time.perf_counter() - t0
        ok = [r for r in res if isinstance(r.get("time"), float)]
        b = min(ok, key=lambda r: r["time"])
        cfg = " ".join(f"{k}={b[k]}" for k in params)
        best[mode] = (cfg, {" ".join(f"{k}={r[k]}" for k in params): r["time"] for r in ok})
        rows.append((bench, f"Kernel Tuner 1.5 ({mode})", wall, cfg, b["time"], f"{len(res)} configs; iterations={iterations}"))
    return best


def process_floor(work, runs=7):
    """Median wall time of process_floor.cu (start, context, one launch, exit): what any tool pays once."""
    exe = work / "process_floor"
    p = subprocess.run(["nvcc", "-O2", "-o", str(exe), str(HERE / "process_floor.cu")], capture_output=True, text=True)
    if p.returncode != 0:
        log("process_floor.cu did not compile:", p.stderr[-1000:])
        return None
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        if subprocess.run([str(exe)]).returncode != 0:
            return None
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def gpu_floor(res):
    """Seconds of GPU time a tool that runs every configuration once (its verifying launch) cannot avoid:
    the sum of each measured configuration's fastest launch, and the reference's two launches."""
    if not res:
        return None
    ms = sum((m.get("timing") or {}).get("min_ms", 0.0) for m in res["measurements"])
    ref = (res.get("reference") or {}).get("objective") or 0.0
    return (ms + 2 * ref) / 1e3


def write_tests(dirpath, kernel, arrays, scalars, outputs):
    t = dirpath / "t0"
    (t / "args").mkdir(parents=True, exist_ok=True)
    args = []
    for name, arr in arrays:
        np.save(t / "args" / f"{name}.npy", arr)
        args.append({"name": name, "kind": "array", "dtype": str(arr.dtype), "shape": list(arr.shape), "file": f"args/{name}.npy"})
    for name, dtype, value in scalars:
        args.append({"name": name, "kind": "scalar", "dtype": dtype, "value": value})
    (t / "manifest.json").write_text(json.dumps({"format": 1, "kernel": kernel, "seed": 1, "args": args, "outputs": outputs}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip-kt-python", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    kt_bin = str(Path(a.kt).resolve())
    work = Path(tempfile.mkdtemp(prefix="tuner-bench-"))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    log("GPU:", gpu)
    have_kt = False
    if not a.skip_kt_python:
        try:
            import kernel_tuner  # noqa: F401
            have_kt = True
            log("kernel_tuner", kernel_tuner.__version__ if hasattr(kernel_tuner, "__version__") else "")
        except Exception as e:  # report and go on with kt alone
            log("Kernel Tuner not importable:", e)

    # ---------------- 1. naive matmul 4096^3, 27 configs ----------------
    n = 4096
    rng = np.random.default_rng(1)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    C = np.zeros((n, n), dtype=np.float32)
    mm_tests = work / "matmul-tests"
    write_tests(mm_tests, "matrixMultiply", [("A", A), ("B", B), ("C", C)], [("A_width", "int32", n), ("A_height", "int32", n), ("B_width", "int32", n)], ["C"])
    bx, by = [8, 16, 32, 64, 128, 256], [1, 2, 4, 8, 16, 32]
    restrict = "32 <= block_size_x*block_size_y and block_size_x*block_size_y <= 1024"
    kt_mm = ["--param", "block_size_x=" + ",".join(map(str, bx)), "--param", "block_size_y=" + ",".join(map(str, by)), "--restrict", restrict]
    kt_times = {}
    if have_kt:
        args = [A.ravel(), B.ravel(), C.ravel(), np.int32(n), np.int32(n), np.int32(n)]
        modes = kernel_tuner_modes("matmul 4096^3, 27 cfg", "matrixMultiply", str(NK / "matmul.cu"), (n, n), args,
                                   {"block_size_x": bx, "block_size_y": by}, [restrict])
        kt_times["matmul"] = modes["default"][1]
    cache = work / "cache-mm"
    for label, extra in [("kt (npy tests, cold)", ["--tests-dir", str(mm_tests), "--cache-dir", str(cache)]),
                         ("kt (npy tests, warm module cache)", ["--tests-dir", str(mm_tests), "--cache-dir", str(cache)]),
                         ("kt (inputs made on GPU, cold)", ["--cache-dir", str(work / "cache-mm2")])]:
        wall, res = kt([str(NK / "matmul.cu"), *kt_mm, "--no-peak", *extra], kt_bin, out, "matmul-" + label.split()[1].strip("(,") + str(len(rows)))
        if res:
            c, ms, g, pct, bad = kt_summary(res)
            ph = res["phases"]
            note = f"{len(res['measurements'])} cfg, verified; {kt_efficiency(res)}; phases ms: ctx {ph['context_ms']:.0f} upload {ph['upload_ms']:.0f} ref {ph['reference_ms']:.0f} bench {ph['benchmark_ms']:.0f} total {ph['total_ms']:.0f}; failed {bad}"
            if "matmul" in kt_times:
                note += f"; KT's time for this config {kt_times['matmul'].get(c, float('nan')):.3f} ms"
            rows.append(("matmul 4096^3, 27 cfg", label, wall, c, ms, note))
            floors.setdefault("matmul 4096^3, 27 cfg", gpu_floor(res))

    # ---------------- 2. matrixAdd 16384^2, 19 configs ----------------
    w = h = 16384
    if have_kt:
        A2 = rng.standard_normal(w * h, dtype=np.float32)
        B2 = rng.standard_normal(w * h, dtype=np.float32)
        C2 = np.zeros(w * h, dtype=np.float32)
        tp = {"block_size_x": [16, 32, 64, 128, 256], "block_size_y": [1, 2, 4, 8, 16]}
        r2 = ["block_size_x*block_size_y >= 64", "block_size_x*block_size_y <= 1024"]
        kernel_tuner_modes("matrixAdd 16384^2, 19 cfg", "matrixAdd", str(NK / "matrixAdd.cu"), (w, h),
                           [A2, B2, C2, np.int32(w), np.int32(h)], tp, r2)
        del A2, B2, C2
    for label, cdir in [("kt (inputs made on GPU, cold)", work / "cache-ma"), ("kt (warm module cache)", work / "cache-ma")]:
        wall, res = kt([str(NK / "matrixAdd.cu"), "--no-peak", "--cache-dir", str(cdir)], kt_bin, out, "matrixAdd-" + str(len(rows)))
        if res:
            c, ms, g, pct, bad = kt_summary(res)
            ph = res["phases"]
            floors.setdefault("matrixAdd 16384^2, 19 cfg", gpu_floor(res))
            rows.append(("matrixAdd 16384^2, 19 cfg", label, wall, c, ms, f"{len(res['measurements'])} cfg verified; {kt_efficiency(res)}; {g or 0:.0f} GB/s; phases ms: ctx {ph['context_ms']:.0f} upload {ph['upload_ms']:.0f} ref {ph['reference_ms']:.0f} bench {ph['benchmark_ms']:.0f} total {ph['total_ms']:.0f}; failed {bad}"))

    # ---------------- 2b. register-tiled matmul 4096^3 (the demo's step 3 kernel and space) ----------------
    rt_src = ROOT / "experiments" / "cassettes" / "matmul-autonomous" / "3-register-tiling.cu"
    rt_params = {"block_size_x": [8, 16, 32], "block_size_y": [8, 16, 32], "tile_size_x": [4, 8], "tile_size_y": [4, 8],
                 "tile_size_k": [8, 16, 32]}
    rt_restrict = [
        "block_size_x * block_size_y <= 1024",
        "block_size_x * block_size_y >= 64",
        "tile_size_x % 4 == 0 and tile_size_y % 4 == 0",
        "(block_size_y * tile_size_y * tile_size_k) % (block_size_x * block_size_y) == 0",
        "(tile_size_k * block_size_x * tile_size_x) % (block_size_x * block_size_y) == 0",
        "4 * tile_size_k * (block_size_y * tile_size_y + 4 + block_size_x * tile_size_x) <= 49152"]
    rt_div = (["block_size_x", "tile_size_x"], ["block_size_y", "tile_size_y"])
    rt_bench = "register-tiled matmul 4096^3"
    if have_kt:
        args = [A.ravel(), B.ravel(), C.ravel(), np.int32(n), np.int32(n), np.int32(n)]
        kernel_tuner_modes(rt_bench, "matrixMultiply", str(rt_src), (n, n), args, rt_params, rt_restrict, rt_div)
    rt_dir = work / "register-tiled"
    rt_dir.mkdir(exist_ok=True)
    shutil.copy(rt_src, rt_dir / "matmul_rt.cu")
    shutil.copy(NK / "matmul.toml", rt_dir / "matmul_rt.toml")
    rt_args = [x for k, v in rt_params.items() for x in ("--param", f"{k}=" + ",".join(map(str, v)))]
    rt_args += [x for r in rt_restrict for x in ("--restrict", r)]
    rt_args += ["--grid-div-x", ",".join(rt_div[0]), "--grid-div-y", ",".join(rt_div[1])]
    for label in ["kt (npy tests, cold)", "kt (npy tests, warm module cache)"]:
        wall, res = kt([str(rt_dir / "matmul_rt.cu"), *rt_args, "--no-peak", "--tests-dir", str(mm_tests),
                        "--cache-dir", str(work / "cache-rt")], kt_bin, out, "register-tiled-" + str(len(rows)))
        if res:
            c, ms, g, pct, bad = kt_summary(res)
            rows.append((rt_bench, label, wall, c, ms, f"{len(res['measurements'])} cfg; {kt_efficiency(res)}; failed {bad}"))
            floors.setdefault(rt_bench, gpu_floor(res))

    # ---------------- 3. bandwidth after tuning ----------------
    bw = []
    pc = work / "cache-bw"
    for name in ["matrixAdd", "sigmoidActivation", "verlet_integration"]:
        wall, res = kt([str(NK / f"{name}.cu"), "--cache-dir", str(pc)], kt_bin, out, f"bw-{name}")
        if res:
            c, ms, g, pct, bad = kt_summary(res)
            bw.append((name + " (naive)", c, ms, g, pct, res.get("peak_gbps"), (res.get("reference") or {}).get("objective") or float("nan")))
    variants = [
        ("matrixAdd", "matrixAdd_tunable.cu", "matrixAdd.toml",
         ["--param", "block_size_x=32,64,128,256,512", "--param", "block_size_y=1,2,4", "--param", "vector_width=1,2,4", "--param", "tile_y=1,2,4",
          "--restrict", "block_size_x*block_size_y >= 64 and block_size_x*block_size_y <= 1024",
          "--grid-div-x", "block_size_x,vector_width", "--grid-div-y", "block_size_y,tile_y"]),
        ("sigmoidActivation", "sigmoid_tunable.cu", "sigmoidActivation.toml",
         ["--param", "block_size_x=64,128,256,512,1024", "--param", "vector_width=1,2,4", "--param", "work_per_thread=1,2,4,8",
          "--grid-div-x", "block_size_x,vector_width,work_per_thread"]),
    ]
    vdir = work / "variants"
    vdir.mkdir(exist_ok=True)
    for name, cu, toml, extra in variants:
        shutil.copy(Path(__file__).parent / cu, vdir / cu)
        shutil.copy(NK / toml, vdir / (Path(cu).stem + ".toml"))
        wall, res = kt([str(vdir / cu), *extra, "--cache-dir", str(pc)], kt_bin, out, f"bw-{name}-tunable")
        if res:
            c, ms, g, pct, bad = kt_summary(res)
            bw.append((name + " (tunable variant)", c, ms, g, pct, res.get("peak_gbps"), (res.get("reference") or {}).get("objective") or float("nan")))
            # the variant's best config against the naive kernel, on fresh inputs at bench size
            if not res.get("best"):
                continue
            params = [x for kv in res["best"]["config"] for x in ("--param", f"{kv[0]}={kv[1]}")]
            gd = [extra[i + 1] for i in range(len(extra)) if extra[i].startswith("--grid-div")]
            gdf = []
            if name == "matrixAdd":
                gdf = ["--grid-div-x", gd[0], "--grid-div-y", gd[1]]
            else:
                gdf = ["--grid-div-x", gd[0]]
            p = subprocess.run([kt_bin, "verify", str(NK / f"{name}.cu"), str(vdir / cu), *params, *gdf, "--bench-size", "--tests-count", "2"], capture_output=True, text=True)
            log(f"kt verify naive {name} vs tunable best ({' '.join(params)}): rc={p.returncode}\n{p.stdout[-1500:]}{p.stderr[-1500:]}")

    # ---------------- final tables ----------------
    log("\n=== wall time: kt-tuner vs Kernel Tuner (GPU: %s) ===" % gpu)
    log(f"{'benchmark':<26} {'tool':<36} {'wall s':>7} {'best config':<40} {'best ms':>8}  notes")
    for b, tool, wall, c, ms, note in rows:
        log(f"{b:<26} {tool:<36} {wall:7.2f} {c:<40} {ms:8.3f}  {note}")
    pf = process_floor(work) if shutil.which("nvcc") else None
    log("\n=== floors: what any tool that runs every configuration once must spend ===")
    log(f"process floor (process_floor.cu: start, context, one launch, exit; median of 7): "
        f"{'not measured' if pf is None else f'{pf:.3f} s'}")
    for b, g in floors.items():
        if g is None:
            continue
        floor = g + (pf or 0.0)
        kts = [r for r in rows if r[0] == b and r[1] == "Kernel Tuner 1.5 (default)"]
        bound = f"; Kernel Tuner default / floor = {kts[0][2] / floor:.1f}x (no tool that verifies every configuration can beat that ratio)" if kts else ""
        log(f"{b:<30} one launch per configuration {g:.3f} s + process floor = {floor:.3f} s{bound}")
    log("\n=== issue 47: Kernel Tuner's wall time over kt's, cold (>= 10x matmul, >= 8x matrixAdd, >= 40x register-tiled) ===")
    for b in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == b and r[1].startswith("kt") and "cold" in r[1]]
        if not mine:
            continue
        k = mine[0]
        eff = k[5].split("eff ")[1].split(" ")[0] if "eff " in k[5] else "?"
        for r in rows:
            if r[0] == b and r[1].startswith("Kernel Tuner"):
                same = "same best" if r[3] == k[3] else f"other best (KT {r[3]})"
                log(f"{b:<30} {r[1]:<34} {r[2]:7.2f} s / kt {k[2]:6.2f} s = {r[2] / k[2]:5.1f}x; {same}; kt efficiency {eff}")
    log("\n=== achieved bandwidth after tuning (bytes from the sidecar's expression) ===")
    log(f"{'kernel':<34} {'best config':<62} {'ms':>7} {'GB/s':>7} {'% copy':>7} {'copy GB/s':>9} {'default ms':>10}")
    for name, c, ms, g, pct, peak, ref in bw:
        log(f"{name:<34} {c:<62} {ms:7.3f} {g or 0:7.0f} {pct or 0:6.1f}% {peak or 0:9.0f} {ref:10.3f}")
    (out / "summary.json").write_text(json.dumps({"gpu": gpu, "rows": rows, "bandwidth": bw, "process_floor_s": pf, "gpu_floor_s": floors}, indent=1))
    (out / "results.json").write_text(json.dumps(runs))


if __name__ == "__main__":
    main()
