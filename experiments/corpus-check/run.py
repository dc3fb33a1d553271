#!/usr/bin/env python3
"""Every corpus kernel tuned and verified on the GPU, in one command (issues 13, 16, 23).

    python3 experiments/corpus-check/run.py [--kt .device/bin/kt] [--out DIR]

1. The suite as people write it: `kt tune FILE --test-size` and `kt verify FILE FILE` for every naive kernel.
2. The wild corpus (tests/corpus/wild): tuned at its test size and verified against itself.
3. Real programs (tests/corpus/programs): each version tuned, and verified against the file's first version.
4. Wrong-but-plausible kernels (tests/corpus/verify): `kt verify REF CAND` at its default tests; the verdict
   must be one of the case's `expect` list.
Writes corpus-check.md (a table per part) to --out and prints it; exits 1 if any row failed.
"""
import argparse, json, pathlib, re, subprocess, sys, time, tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(cmd, timeout=240, split=False):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or "") if isinstance(e.stdout, str) else "", "timed out", "timeout"
    if split:
        return rc, out, err, time.time() - t0
    return rc, out + err, time.time() - t0


def last_line(out, pattern=None):
    lines = [l.strip() for l in out.strip().splitlines() if l.strip()]
    if pattern:
        hits = [l for l in lines if re.search(pattern, l)]
        if hits:
            return hits[-1]
    return lines[-1] if lines else ""


def tune_row(kt, label, args):
    rc, stdout, stderr, secs = run([kt, "tune", *args, "--json"], split=True)
    out = stdout + stderr
    try:
        j = json.loads(stdout)
        best = j.get("best") or {}
        cfg = " ".join(f"{k}={v}" for k, v in (best.get("config") or []))
        ms = (best.get("timing") or {}).get("median_ms")
        n = len(j.get("measurements") or [])
        ok = rc == 0 and bool(best)
        what = f"best {cfg} {ms:.4f} ms (one launch), {n} configurations" if ok and ms else last_line(out)
    except (ValueError, json.JSONDecodeError):
        ok, what = False, last_line(out, r"error|FAIL")
    return (label, "tune", "ok" if ok else "FAIL", f"{secs:.1f}", what.replace("|", "/"))


def verify_row(kt, label, args, expect=("correct",)):
    rc, out, secs = run([kt, "verify", *args])
    if rc == 0 and re.search(r"all tests passed", out):
        verdict = "correct"
    elif re.search(r"never written", out):
        verdict = "never_written"
    elif re.search(r"input \w+ was modified|modified by the candidate", out):
        verdict = "input_modified"
    elif re.search(r"nondeterministic|differ(s|ed)? between runs", out, re.I):
        verdict = "nondeterministic"
    elif re.search(r"elements wrong|wrong answer|wrong result", out, re.I):
        verdict = "wrong_results"
    elif re.search(r"compile error|errors? detected in the compilation", out, re.I):
        verdict = "compile_error"
    elif re.search(r"kernel not found", out, re.I):
        verdict = "kernel_not_found"
    elif re.search(r"timeout|timed out", out, re.I):
        verdict = "timeout"
    elif re.search(r"launch error|crash", out, re.I):
        verdict = "launch_error"
    else:
        verdict = f"error: {last_line(out)}"
    ok = verdict in expect
    detail = last_line(out, r"FAIL|wrong|written|modified|differ|error|passed")
    return (label, "verify", "ok" if ok else "FAIL", f"{secs:.1f}", f"{verdict} (expected {'/'.join(expect)}); {detail}".replace("|", "/"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kt", default=".device/bin/kt")
    ap.add_argument("--out", default="/tmp/corpus-check")
    ap.add_argument("--parts", default="suite,wild,programs,verify")
    a = ap.parse_args()
    kt, parts = a.kt, a.parts.split(",")
    tables = {}

    if "suite" in parts:
        rows = []
        for cu in sorted((ROOT / "naive-kernels").glob("*.cu")):
            f = str(cu.relative_to(ROOT))
            rows.append(tune_row(kt, cu.stem, [f, "--test-size"]))
            rows.append(verify_row(kt, cu.stem, [f, f]))
        tables["The suite as people write it (plain __global__)"] = rows

    if "wild" in parts:
        rows = []
        for cu in sorted((ROOT / "tests/corpus/wild").glob("*.cu")):
            f = str(cu.relative_to(ROOT))
            extra = ["--param", "blockSize=128,256"] if cu.stem == "reduce_template" else []
            rows.append(tune_row(kt, cu.stem, [f, "--test-size", *extra]))
            rows.append(verify_row(kt, cu.stem, [f, f, *(["--template", "blockSize=256", "--param", "block_size_x=256"] if extra else [])]))
        tables["Wild corpus (tests/corpus/wild)"] = rows

    if "programs" in parts:
        rows = []
        programs = [
            ("bench-style/softmax_forward.cu", ["softmax_forward_kernel1", "softmax_forward_kernel2", "softmax_forward_kernel3"], {}),
            ("bench-style/gelu_forward.cu", ["gelu_forward_kernel1", "gelu_forward_kernel2"], {}),
            ("sample-style/reduction.cu", ["reduce0", "reduce3"], {"reduce3": ["--param", "blockSize=64,128,256,512"]}),
            ("sample-style/transpose.cu", ["transposeNaive", "transposeCoalesced"], {}),
        ]
        for path, kernels, extra in programs:
            f = f"tests/corpus/programs/{path}"
            first = kernels[0]
            for k in kernels:
                rows.append(tune_row(kt, f"{path}:{k}", [f, "--kernel", k, "--test-size", *extra.get(k, [])]))
                vextra = ["--template", "blockSize=256", "--param", "block_size_x=256"] if k == "reduce3" else []
                rows.append(verify_row(kt, f"{path}:{k} vs {first}", [f, f, "--reference-kernel", first, "--kernel", k, *vextra]))
        tables["Real programs: every version tuned and verified against the file's first version"] = rows

    if "verify" in parts:
        rows = []
        cases = tomllib.loads((ROOT / "tests/corpus/verify/cases.toml").read_text())["case"]
        for c in cases:
            args = [c["reference"], f"tests/corpus/verify/{c['file']}"]
            for p in c["params"]:
                args += ["--param", p]
            rows.append(verify_row(kt, c["file"], args, tuple(c["expect"])))
        tables["Wrong-but-plausible kernels at kt verify's defaults"] = rows

    md = []
    failed = 0
    for title, rows in tables.items():
        md += [f"### {title}", "", "| kernel | command | result | s | what kt said |", "|---|---|---|---|---|"]
        for r in rows:
            md.append("| " + " | ".join(r) + " |")
            failed += r[2] != "ok"
        md.append("")
    total = sum(len(r) for r in tables.values())
    md.append(f"{total - failed} of {total} rows ok")
    text = "\n".join(md)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "corpus-check.md").write_text(text + "\n")
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
