"""Runs Kernel Tuner's CUDA example scripts (examples/cuda of Kernel Tuner's repository) with Kernel Tuner and,
with only their imports rewritten, with kt; compares what each tuning found and how long it took.

    python3 run.py --list [--markdown]            the scripts, what kt does with each and why
    python3 run.py --extract [--mirror GITDIR]    examples/cuda from Kernel Tuner's repository into ./examples
    python3 run.py [--only kt|kernel_tuner] [--scripts a.py,b.py] [--timeout S] [--out DIR]
                   [--kt-path DIR | --kt-wheel WHL] [--kernel-tuner-path DIR | --kernel-tuner-wheels DIR]
    python3 run.py --summarize RESULTS.json ...   one summary of several runs (e.g. one per GPU command)

Each script runs in a fresh process (``harness.py``) from a fresh folder holding it and the examples' .cu
files, with a timeout: first with Kernel Tuner as written, then rewritten for kt by REWRITE below (import
lines only). The harness records every ``tune_kernel`` / ``run_kernel`` call; the best configurations of
matching calls are compared (the same, within ``--noise`` by either tool's own times, or different).
``results.json`` (merged with what ``--out`` already holds, by script and tool) and ``summary.md`` go to
``--out`` (default ``$OUT`` when set, else ./results). README.md says how to run it on a GPU machine.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MIRROR = "/work/.mirror/KernelTuner+kernel_tuner/repo"
TOOLS = ("kernel_tuner", "kt")

# The rewrite, applied to import lines only; nothing else in a script changes (`kernel_tuner.X` in the code
# then reaches kt through the alias).
REWRITE = [
    (re.compile(r"^(\s*)import kernel_tuner(\s*(#.*)?)$"), r"\1import kt as kernel_tuner\2"),
    (re.compile(r"^(\s*)import kernel_tuner\.([\w.]+) as (\w+)"), r"\1import kt.\2 as \3"),
    (re.compile(r"^(\s*)from kernel_tuner(\.[\w.]+)? import "), r"\1from kt\2 import "),
]

RUNS = "runs"  # kt runs it, imports rewritten
HUGE = "runs, too large to tune"  # kt accepts it; its space takes days with either tool: not run by default
NOT_KT = "not in kt"  # kt stops at the line that needs what it does not have, saying why
NOT_EITHER = "fails with Kernel Tuner 1.5 too"

# script: (status, configurations tuned, what it needs besides numpy and the tool, note/reason)
SCRIPTS = {
    "accuracy.py": (NOT_KT, "18", "", "TunablePrecision arguments (a parameter picks each array's dtype) and "
                    "AccuracyObserver error metrics: kt.accuracy raises NotImplementedError saying so"),
    "convolution.py": (HUGE, "3,145,728 before restrictions", "", "cmem_args, grid_div, restrictions; "
                       "accepted by kt; days of tuning with either tool"),
    "convolution_correct.py": (RUNS, "1,080", "", "run_kernel (lang=\"cupy\") for the answer, cmem_args"),
    "convolution_streams.py": (NOT_KT, "-", "pycuda", "lang=\"C\" host code (a list of .cu files with "
                               "streams) and PyCUDA pinned memory: kt tunes CUDA kernels only"),
    "expdist.py": (RUNS, "640 + 32", "CUDA headers (cub)", "two kernels, kernel_tuner.util.get_best_config"),
    "going_green_performance_model.py": (NOT_KT, "-", "pycuda, matplotlib, scipy",
                                         "kernel_tuner.energy and NVML clocks (a power model, no tuning)"),
    "matmul.py": (RUNS, "40", "", "a file name as kernel_source, metrics, iterations=32"),
    "pnpoly.py": (NOT_KT, "-", "pycuda", "lang=\"C\" host code and PyCUDA mapped memory"),
    "pnpoly_cupy.py": (NOT_KT, "-", "cupy", "lang=\"C\" host code (kt tunes CUDA kernels only)"),
    "python_kernel.py": (RUNS, "-", "", "kernelbuilder.PythonKernel (no tuning)"),
    "python_kernel_cupy.py": (RUNS, "-", "cupy", "kernelbuilder.PythonKernel on cupy arrays (no tuning)"),
    "reduction.py": (RUNS, "2,376 + 11 x 216", "", "a verify function, problem_size as a parameter name, "
                     "loop_unroll_factor_0, 3.2 GB input, util.get_config_string"),
    "sepconv.py": (HUGE, "29,920 + 299,200", "pandas", "accepted by kt; hours to days with either tool"),
    "sepconv_parallel.py": (NOT_EITHER, "29,920 + 299,200", "ray (Kernel Tuner)",
                            "passes parallel_runner=1024, which neither Kernel Tuner 1.5 nor kt has "
                            "(TypeError); huge as sepconv.py"),
    "spmv.py": (RUNS, "128", "scipy", "answer with atol, grid_div expression"),
    "stencil.py": (RUNS, "31", "", ""),
    "test_vector_add.py": (RUNS, "-", "pytest, pycuda", "run_kernel in a pytest test; skipped by both tools "
                           "where PyCUDA is missing (the test checks for it)"),
    "test_vector_add_parameterized.py": (RUNS, "-", "pytest", "run_kernel in 6 parameterized pytest tests"),
    "texture.py": (NOT_KT, "4", "", "texmem_args (texture references): kt refuses them; CUDA 12 removed "
                   "texture references, so Kernel Tuner fails to compile it on CUDA 13 too"),
    "vector_add.py": (RUNS, "15", "", "file_utils.store_output_file / store_metadata_file (T4 JSON)"),
    "vector_add_codegen.py": (RUNS, "15", "", "a code generator function as kernel_source"),
    "vector_add_cupy.py": (RUNS, "15", "cupy", "cupy arrays as arguments and answer, lang=\"Cupy\""),
    "vector_add_custom_strategy.py": (NOT_KT, "15", "", "strategy=kernel_tuner.strategies.minimize, a Kernel "
                                      "Tuner strategy module: kt.strategies raises AttributeError naming "
                                      "kt's strategies"),
    "vector_add_jinja.py": (RUNS, "15", "jinja2", "a Jinja template's render as kernel_source"),
    "vector_add_jinja2.py": (RUNS, "3,072", "jinja2", "template render, grid_div expression, answer"),
    "vector_add_metric.py": (RUNS, "32", "", "metrics as a function and as an expression"),
    "vector_add_nvcuda.py": (RUNS, "15", "cuda-python (Kernel Tuner)", "lang=\"nvcuda\" (Kernel Tuner needs cuda-python for it)"),
    "vector_add_observers.py": (NOT_KT, "15", "pynvml (Kernel Tuner)", "NVMLObserver (energy, temperature): kt measures "
                                "time only; kt.observers.nvml raises NotImplementedError saying so"),
    "vector_add_observers_ncu.py": (NOT_KT, "15", "ncu (Kernel Tuner)", "NCUObserver (Nsight Compute counters per "
                                    "configuration): not in kt's tune_kernel"),
    "vector_add_observers_pmt.py": (NOT_KT, "15", "pmt (Kernel Tuner)", "PMTObserver (power): not in kt"),
    "vector_add_parallel.py": (RUNS, "2,048", "ray (Kernel Tuner)", "parallel=True (Kernel Tuner needs ray; kt tunes on one "
                               "GPU, compiling on every core)"),
    "vector_add_tegra_observer.py": (NOT_KT, "15", "a Jetson (Kernel Tuner)", "TegraObserver (Jetson clocks): not in kt"),
    "zeromeanfilter.py": (RUNS, "31 + 31", "", "two kernels, grid_div_y=[]"),
}


def rewrite(text):
    """``text`` with its Kernel Tuner imports made kt's (REWRITE), and the lines changed."""
    lines, changed = [], []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        new = line
        for pattern, replacement in REWRITE:
            new = pattern.sub(replacement, new)
        if new != line:
            changed.append((n, line.rstrip("\n"), new.rstrip("\n")))
        lines.append(new)
    return "".join(lines), changed


def mode_of(script):
    return "pytest" if script.startswith("test_") else "main"


# ---------------------------------------------------------------------------------------------------------
# preparing the examples and the tools


def extract(mirror, dest):
    """examples/cuda of Kernel Tuner's repository (a bare git directory or a checkout) into ``dest``."""
    os.makedirs(dest, exist_ok=True)
    checkout = os.path.join(mirror, "examples", "cuda")
    if os.path.isdir(checkout):
        for name in os.listdir(checkout):
            shutil.copy2(os.path.join(checkout, name), dest)
        return
    git = ["git", "--git-dir", mirror] if not os.path.isdir(os.path.join(mirror, ".git")) else ["git", "-C", mirror]
    names = subprocess.run(git + ["ls-tree", "--name-only", "HEAD", "examples/cuda/"], check=True,
                           capture_output=True, text=True).stdout.split()
    commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    for path in names:
        data = subprocess.run(git + ["show", f"HEAD:{path}"], check=True, capture_output=True).stdout
        with open(os.path.join(dest, os.path.basename(path)), "wb") as f:
            f.write(data)
    with open(os.path.join(dest, "SOURCE"), "w", encoding="utf-8") as f:
        f.write(f"Kernel Tuner {commit} examples/cuda (Apache-2.0), extracted by run.py --extract\n")


def unpack_wheels(wheels, site):
    """Every wheel in ``wheels`` (a folder or one .whl) unpacked into ``site``: a folder for PYTHONPATH."""
    files = [wheels] if os.path.isfile(wheels) else sorted(
        os.path.join(wheels, w) for w in os.listdir(wheels) if w.endswith(".whl"))
    if not files:
        sys.exit(f"no .whl files in {wheels}")
    os.makedirs(site, exist_ok=True)
    for w in files:
        with zipfile.ZipFile(w) as z:
            z.extractall(site)
    return site


def tool_path(args, tool, work):
    """The folder that goes first on PYTHONPATH for ``tool`` (None: what the interpreter imports)."""
    if tool == "kt":
        if args.kt_wheel:
            return unpack_wheels(args.kt_wheel, os.path.join(work, "site-kt"))
        return args.kt_path
    if args.kernel_tuner_wheels:
        return unpack_wheels(args.kernel_tuner_wheels, os.path.join(work, "site-kernel_tuner"))
    return args.kernel_tuner_path


# ---------------------------------------------------------------------------------------------------------
# running


def run_one(args, tool, script, site, work):
    """Runs ``script`` with ``tool`` through the harness; its record (the harness's, with the run's facts)."""
    folder = os.path.join(work, tool, script[:-3])
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for name in os.listdir(args.examples):
        if name.endswith((".cu", ".h", ".cuh")):
            shutil.copy2(os.path.join(args.examples, name), folder)
    with open(os.path.join(args.examples, script), encoding="utf-8") as f:
        text = f.read()
    changed = []
    if tool == "kt":
        text, changed = rewrite(text)
    with open(os.path.join(folder, script), "w", encoding="utf-8") as f:
        f.write(text)
    result = os.path.join(folder, "harness-result.json")
    env = dict(os.environ)
    paths = [p for p in [site, env.get("PYTHONPATH")] if p]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    command = [args.python, os.path.join(HERE, "harness.py"), "--tool", tool, "--script",
               os.path.join(folder, script), "--result", result, "--mode", mode_of(script)]
    log_path = os.path.join(folder, "output.log")
    start = time.perf_counter()
    timed_out = False
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.perf_counter() - start
    try:
        with open(result, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        record = {"tool": tool, "script": script, "calls": [], "status": "error",
                  "error": f"the harness wrote no result (exit code {proc.returncode})"}
    if timed_out:
        record["status"] = "timeout"
        record["error"] = f"stopped after {args.timeout} s"
    record["process_wall_s"] = wall
    record["exit_code"] = proc.returncode
    record["rewritten_lines"] = [f"{n}: {old}  ->  {new}" for n, old, new in changed]
    with open(log_path, encoding="utf-8", errors="replace") as f:
        record["output_tail"] = f.read()[-3000:]
    record["catalogue"] = dict(zip(("status", "configurations", "needs", "note"), SCRIPTS.get(script, ("?",) * 4)))
    return record


# ---------------------------------------------------------------------------------------------------------
# comparing


def compare_call(theirs, ours, noise):
    """One call's best configurations: Kernel Tuner's (``theirs``) and kt's (``ours``)."""
    if theirs.get("kind") != ours.get("kind") or theirs.get("kernel_name") != ours.get("kernel_name"):
        return {"verdict": "calls differ", "detail": f"{theirs.get('kernel_name')} / {ours.get('kernel_name')}"}
    if theirs["kind"] == "run_kernel":
        same = [a.get("shape") == b.get("shape") for a, b in zip(theirs.get("arguments", []), ours.get("arguments", []))]
        return {"verdict": "run_kernel" if all(same) else "run_kernel shapes differ",
                "wall_s": [theirs.get("wall_s"), ours.get("wall_s")]}
    if theirs.get("best") is None or ours.get("best") is None:
        return {"verdict": "no best", "detail": f"Kernel Tuner {theirs.get('best')}, kt {ours.get('best')}"}
    out = {"kernel_tuner_best": theirs["best"], "kt_best": ours["best"],
           "kernel_tuner_best_ms": theirs.get("best_time_ms"), "kt_best_ms": ours.get("best_time_ms"),
           "wall_s": [theirs.get("wall_s"), ours.get("wall_s")]}
    if theirs["best"] == ours["best"]:
        out["verdict"] = "same"
        return out
    key_t = json.dumps([theirs["best"][n] for n in theirs["params"]])
    key_o = json.dumps([ours["best"][n] for n in ours["params"]])
    fails_in_kt = (ours.get("failures") or {}).get(key_t)
    if fails_in_kt is not None:
        # Kernel Tuner timed a configuration that does not run (a launch it did not check): compare kt's
        # pick with Kernel Tuner's best among the configurations kt ran
        out["kernel_tuner_pick_fails_in_kt"] = fails_in_kt
        runs = {k: t for k, t in theirs["times_ms"].items() if k not in (ours.get("failures") or {})}
        if runs:
            key_t = min(runs, key=runs.get)
            out["kernel_tuner_best_that_runs"] = dict(zip(theirs["params"], json.loads(key_t)))
            out["kernel_tuner_best_that_runs_ms"] = runs[key_t]
            if key_t == key_o:
                out["verdict"] = "same, once Kernel Tuner's failed pick is left out"
                return out
    # how much slower the other's pick is, by each tool's own times (None: that tool did not measure it)
    by_kt_tuner = _slower(theirs["times_ms"], key_o, key_t)
    by_kt = _slower(ours["times_ms"], key_t, key_o)
    out["kt_pick_slower_by_kernel_tuner"] = by_kt_tuner
    out["kernel_tuner_pick_slower_by_kt"] = by_kt
    close = [d for d in (by_kt_tuner, by_kt) if d is not None]
    out["verdict"] = "within noise" if close and min(close) <= noise else "differs"
    if fails_in_kt is not None:
        out["verdict"] += ", once Kernel Tuner's failed pick is left out"
    return out


def _slower(times, other, own):
    if other in times and own in times and times[own] > 0:
        return times[other] / times[own] - 1
    return None


def compare(records, noise):
    """The comparison of a script's two records (either may be missing)."""
    kt_rec = records.get("kt")
    kt_tuner = records.get("kernel_tuner")
    row = {}
    if kt_rec and kt_tuner:
        calls = [compare_call(a, b, noise) for a, b in zip(kt_tuner.get("calls", []), kt_rec.get("calls", []))]
        row["calls"] = calls
        if len(kt_tuner.get("calls", [])) != len(kt_rec.get("calls", [])):
            row["note"] = f"{len(kt_tuner.get('calls', []))} calls with Kernel Tuner, {len(kt_rec.get('calls', []))} with kt"
        tuned = [c for c in calls if "kt_best" in c]
        if not tuned:
            row["best"] = "-"
        elif all(c["verdict"] == "same" for c in tuned):
            row["best"] = "same"
        elif all(c["verdict"].split(",")[0] in ("same", "within noise") for c in tuned):
            row["best"] = "within noise" if any(c["verdict"].startswith("within") for c in tuned) else "same"
            if any("failed pick" in c["verdict"] for c in tuned):
                row["best"] += " (Kernel Tuner's own pick failed to run)"
        else:
            row["best"] = "differs"
        if kt_rec.get("wall_s") and kt_tuner.get("wall_s") and kt_rec["status"] == kt_tuner["status"] == "ok":
            row["speed"] = kt_tuner["wall_s"] / kt_rec["wall_s"]
            t_calls = sum(c.get("wall_s", 0) for c in kt_tuner["calls"])
            o_calls = sum(c.get("wall_s", 0) for c in kt_rec["calls"])
            if t_calls and o_calls:
                row["speed_calls"] = t_calls / o_calls
    return row


def status_text(rec):
    if rec is None:
        return "-"
    s = rec.get("status", "?")
    if s == "ok":
        return f"ok {rec.get('wall_s', 0):.1f} s"
    if s == "missing module":
        return f"needs {rec.get('missing')}"
    if s == "timeout":
        return f"timeout ({len([c for c in rec.get('calls', []) if 'best' in c])} calls done)"
    err = (rec.get("error") or "").replace("|", "/").replace("\n", " ")
    return f"{s}: {err[:140]}"


def summary_markdown(by_script, noise):
    lines = [
        "| script | kt status (catalogue) | Kernel Tuner | kt | best configuration | speed (KT wall / kt wall) |",
        "|---|---|---|---|---|---|",
    ]
    details = []
    for script in sorted(by_script):
        records = by_script[script]
        row = compare(records, noise)
        cat = SCRIPTS.get(script, ("?",))[0]
        speed = f"{row['speed']:.2f}x" if "speed" in row else "-"
        if "speed_calls" in row:
            speed += f" (calls {row['speed_calls']:.2f}x)"
        lines.append(f"| {script} | {cat} | {status_text(records.get('kernel_tuner'))} | "
                     f"{status_text(records.get('kt'))} | {row.get('best', '-')} | {speed} |")
        for i, c in enumerate(row.get("calls", [])):
            if "kt_best" in c:
                extra = ""
                if "kernel_tuner_pick_fails_in_kt" in c:
                    extra += (f"; Kernel Tuner's pick does not run (kt: {c['kernel_tuner_pick_fails_in_kt']}), its best "
                              f"that runs is {c.get('kernel_tuner_best_that_runs')} {_ms(c.get('kernel_tuner_best_that_runs_ms'))}")
                if c["verdict"].split(",")[0] != "same":
                    extra += (f"; kt's pick is {_pct(c.get('kt_pick_slower_by_kernel_tuner'))} by Kernel Tuner's times, "
                             f"Kernel Tuner's pick {_pct(c.get('kernel_tuner_pick_slower_by_kt'))} by kt's")
                details.append(f"- {script} call {i + 1}: {c['verdict']}: Kernel Tuner {c['kernel_tuner_best']} "
                               f"{_ms(c['kernel_tuner_best_ms'])}, kt {c['kt_best']} {_ms(c['kt_best_ms'])}{extra}; "
                               f"wall {c['wall_s'][0]:.1f} s / {c['wall_s'][1]:.1f} s")
    text = "\n".join(lines)
    if details:
        text += "\n\nPer tuning call (best configuration and its time by each tool; wall time KT / kt):\n\n" + "\n".join(details)
    return text + f"\n\n'within noise': the picks differ, and one tool's own times put the other's pick at most {noise:.0%} slower.\n"


def _pct(d):
    return "not measured" if d is None else f"{d:+.1%}"


def _ms(t):
    return "" if t is None else f"({t:.4f} ms)"


def load_results(paths):
    """Records by script and tool from results files (later files win)."""
    by_script = {}
    for p in paths:
        if not os.path.exists(p):
            continue
        with open(p, encoding="utf-8") as f:
            for rec in json.load(f).get("records", []):
                by_script.setdefault(rec["script"], {})[rec["tool"]] = rec
    return by_script


def write_outputs(out, by_script, noise):
    os.makedirs(out, exist_ok=True)
    records = [r for s in sorted(by_script) for r in by_script[s].values()]
    comparisons = {s: compare(by_script[s], noise) for s in sorted(by_script)}
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"records": records, "comparisons": comparisons, "noise": noise}, f, indent=1, default=str)
    with open(os.path.join(out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(summary_markdown(by_script, noise))


# ---------------------------------------------------------------------------------------------------------


def list_scripts(markdown=False):
    if markdown:
        print("| script | with kt | configurations | needs (besides numpy) | what it uses / why not |")
        print("|---|---|---|---|---|")
        for script, (status, configs, needs, note) in SCRIPTS.items():
            print(f"| {script} | {status} | {configs} | {needs or '-'} | {note or '-'} |")
        return
    width = max(len(s) for s in SCRIPTS)
    for script, (status, configs, needs, note) in SCRIPTS.items():
        print(f"{script:{width}}  {status:32}  {configs:>20}  {needs or '':24}  {note}")
    counts = {}
    for status, *_ in SCRIPTS.values():
        counts[status] = counts.get(status, 0) + 1
    print("\n" + ", ".join(f"{n} {s}" for s, n in counts.items()) + f" ({len(SCRIPTS)} scripts)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--list", action="store_true", help="list the scripts and what kt does with each")
    p.add_argument("--markdown", action="store_true", help="with --list: as README.md's table")
    p.add_argument("--extract", action="store_true", help="extract examples/cuda into --examples and stop")
    p.add_argument("--mirror", default=MIRROR, help="Kernel Tuner's repository (bare git dir or checkout)")
    p.add_argument("--examples", default=os.path.join(HERE, "examples"), help="the scripts and .cu files")
    p.add_argument("--only", choices=TOOLS, help="run with this tool only")
    p.add_argument("--scripts", help="comma-separated script names (default: all but the huge ones)")
    p.add_argument("--include-huge", action="store_true", help="also run the scripts too large to tune")
    p.add_argument("--timeout", type=float, default=600, help="seconds per script and tool (default 600)")
    p.add_argument("--noise", type=float, default=0.05, help="relative time difference counted as noise")
    p.add_argument("--out", default=os.environ.get("OUT") or os.path.join(HERE, "results"))
    p.add_argument("--work", help="folder for the scripts' runs (default: a temporary one)")
    p.add_argument("--python", default=sys.executable, help="interpreter for the scripts")
    p.add_argument("--kt-path", help="folder put first on PYTHONPATH for kt (an unpacked wheel)")
    p.add_argument("--kt-wheel", help="kt's wheel, unpacked into the work folder for kt's runs")
    p.add_argument("--kernel-tuner-path", help="folder put first on PYTHONPATH for Kernel Tuner")
    p.add_argument("--kernel-tuner-wheels", help="folder of wheels (Kernel Tuner and its dependencies), unpacked")
    p.add_argument("--summarize", nargs="+", metavar="RESULTS_JSON", help="merge results files into --out")
    p.add_argument("--show-rewrite", action="store_true", help="print each script's rewritten lines and stop")
    args = p.parse_args()

    if args.list:
        list_scripts(args.markdown)
        return
    if args.extract:
        extract(args.mirror, args.examples)
        print(f"extracted into {args.examples}")
        return
    if args.summarize:
        by_script = load_results(args.summarize)
        write_outputs(args.out, by_script, args.noise)
        print(open(os.path.join(args.out, "summary.md"), encoding="utf-8").read())
        return
    if not os.path.isdir(args.examples):
        sys.exit(f"no examples in {args.examples}: run `python3 {sys.argv[0]} --extract` first (README.md)")
    if args.scripts:
        scripts = [s if s.endswith(".py") else s + ".py" for s in args.scripts.split(",")]
        unknown = [s for s in scripts if not os.path.exists(os.path.join(args.examples, s))]
        if unknown:
            sys.exit(f"no such scripts in {args.examples}: {', '.join(unknown)}")
    else:
        scripts = [s for s, (status, *_) in SCRIPTS.items()
                   if args.include_huge or status not in (HUGE, NOT_EITHER)]
    if args.show_rewrite:
        for s in scripts:
            with open(os.path.join(args.examples, s), encoding="utf-8") as f:
                for n, old, new in rewrite(f.read())[1]:
                    print(f"{s}:{n}: {old.strip()}  ->  {new.strip()}")
        return
    tools = [args.only] if args.only else list(TOOLS)
    work = args.work or tempfile.mkdtemp(prefix="kt-examples-")
    sites = {t: tool_path(args, t, work) for t in tools}
    results_path = os.path.join(args.out, "results.json")
    by_script = load_results([results_path])
    for script in scripts:
        for tool in tools:
            print(f"{script} with {tool} ...", flush=True)
            rec = run_one(args, tool, script, sites[tool], work)
            by_script.setdefault(script, {})[tool] = rec
            print(f"  {status_text(rec)}", flush=True)
            write_outputs(args.out, by_script, args.noise)
    print()
    print(open(os.path.join(args.out, "summary.md"), encoding="utf-8").read())
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
