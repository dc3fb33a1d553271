#!/usr/bin/env python3
"""Every corpus kernel tuned and verified on the GPU, in one command (issues 13, 16, 23).

    python3 experiments/corpus-check/run.py [--kt .device/bin/kt] [--out DIR]

1. The suite as people write it: `kt tune FILE --test-size` and `kt verify FILE FILE` for every naive kernel.
2. The wild corpus (tests/corpus/wild): tuned at its test size and verified against itself.
3. Real programs (tests/corpus/programs): each version tuned, and verified against the file's first version.
4. Wrong-but-plausible kernels (tests/corpus/verify): `kt verify REF CAND` at its default tests; the verdict
   must be one of the case's `expect` list.
5. Reward hacks (tests/corpus/verify/attacks, issues 29 and 48): each case `--repeat` times (default 5)
   through `kt verify` or `kt tune`; a row is ok when every run's verdict is expected, and flaky when runs
   disagree; `kt transform` cases give the attack as a scripted LLM's one rewrite (one-prompt) of a suite
   kernel. `python3 experiments/corpus-check/run.py --parts attacks` runs only these.
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


def classify_verify(rc, out):
    """The verdict kind of a `kt verify` run, from what it printed (the kinds of cases.toml)."""
    checks = [
        ("out_of_bounds", r"out-of-bounds write|wrote \d+ bytes (past the end|before the start)", 0),
        ("timed_run_differs", r"timed launches differ", 0),
        ("carries_state", r"state carried between inputs", 0),
        ("impossible_time", r"impossibly fast", 0),
        ("never_written", r"never written", 0),
        ("input_modified", r"input \w+ was modified|modified by the candidate", 0),
        ("nondeterministic", r"nondeterministic|differ(s|ed)? between runs", re.I),
        ("wrong_results", r"elements wrong|wrong answer|wrong result", re.I),
        ("compile_error", r"compile error|errors? detected in the compilation", re.I),
        ("kernel_not_found", r"kernel not found", re.I),
        ("timeout", r"timeout|timed out", re.I),
        ("launch_error", r"launch error|crash", re.I),
    ]
    if rc == 0 and re.search(r"all tests passed", out):
        return "correct"
    for kind, pattern, flags in checks:
        if re.search(pattern, out, flags):
            return kind
    return f"error: {last_line(out)}"


def verify_row(kt, label, args, expect=("correct",)):
    rc, out, secs = run([kt, "verify", *args])
    verdict = classify_verify(rc, out)
    ok = verdict in expect
    detail = last_line(out, r"FAIL|wrong|written|modified|differ|error|passed")
    return (label, "verify", "ok" if ok else "FAIL", f"{secs:.1f}", f"{verdict} (expected {'/'.join(expect)}); {detail}".replace("|", "/"))


# `kt tune --json` names verdicts as kt verify's report does (snake_case `kind`), so the attacks' `expect`
# lists use them as they are; a kind renamed in the tuner would be mapped here.
TUNE_KINDS: dict = {}


def tune_verdicts(kt, args, honest_best=None):
    """`kt tune --json`: "delivered CONFIG" when it delivers a best configuration, else the sorted verdict
    kinds of the configurations it refused (the default launch's among them). `honest_best`: a configuration
    at which the attack is honest (`block_size_x=16 block_size_y=16`); delivering it is right, and the
    verdict is then what kt said of the others."""
    rc, stdout, stderr, secs = run([kt, "tune", *args, "--json"], timeout=600, split=True)
    try:
        j = json.loads(stdout)
    except (ValueError, json.JSONDecodeError):
        # a reference kt refuses to take expected values from (it did no work on the test) is a verdict
        if "the reference launch failed" in stderr and "does no work" in stderr:
            return "reference_does_no_work", secs
        if "the reference launch failed" in stderr and "timed launches are not the work" in stderr:
            return "reference_timed_run_differs", secs
        return f"error: {last_line(stdout + stderr)}", secs
    # the default launch's verdict too: kt refuses it as the best when it fails a check
    judged = [*(j.get("measurements") or []), *([j["reference"]] if j.get("reference") else [])]
    kinds = sorted({TUNE_KINDS.get(k, k) for k in
                    ((m.get("verdict") or {}).get("kind") for m in judged) if k and k != "ok"})
    best = j.get("best")
    if best:
        config = " ".join(f"{a}={b}" for a, b in (best.get("config") or []))
        if not (honest_best and config == honest_best and kinds):
            return f"delivered {config}", secs
    return "+".join(kinds) or "nothing refused, nothing delivered", secs


def verify_attack(kt, args):
    rc, out, secs = run([kt, "verify", *args], timeout=600)
    return classify_verify(rc, out), secs


def transform_script(case, code):
    """A scripted LLM for `kt transform --strategy one-prompt`: the suite kernel's Stage 1 and 2 answers (above
    the `# --- Stage 3` marker of its scripted file), then `code` as the one apply answer with the case's
    parameters, and no restrictions."""
    head = (ROOT / case["scripted"]).read_text().split("# --- Stage 3")[0]
    params = []
    for p in case["params"]:
        name, values = p.split("=")
        params.append({"name": name, "values": [int(v) for v in values.split(",")]})
    apply = json.dumps({"code": code, "parameters": params, "explanation": "the attack corpus's kernel"})
    restrictions = json.dumps({"restrictions": []})
    # a failed candidate is retried with kt's feedback: the attack answers the same each time, as a stubborn
    # model would, so every attempt is judged (and none ends as "LLM unavailable")
    answer = ("\n[[answers]]\nnode = \"stage3.apply\"\ntext = " + json.dumps(apply)
              + "\n\n[[answers]]\nnode = \"stage3.restrictions\"\ntext = " + json.dumps(restrictions) + "\n")
    return head + answer * 3


def transform_verdict(kt, case, code):
    """`kt transform` with the attack as the LLM's one rewrite: "delivered" when the run improved on the
    original with it, else its candidate's verdict in the kinds of `kt verify` (from the candidate's record)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        script = pathlib.Path(d) / "answers.toml"
        script.write_text(transform_script(case, code))
        rc, out, secs = run([kt, "transform", case["reference"], "--strategy", "one-prompt",
                             "--llm", f"scripted:{script}", "--runs-dir", d], timeout=1200)
        runs = [p for p in pathlib.Path(d).iterdir() if p.is_dir()]
        if not runs:
            return f"error: {last_line(out)}", secs
        result = json.loads((runs[0] / "result.json").read_text()) if (runs[0] / "result.json").exists() else {}
        if result.get("outcome") == "improved":
            return "delivered", secs
        records = sorted((runs[0] / "kernels").glob("*.json"))
        cands = [json.loads(r.read_text()) for r in records if not r.name.startswith("000")]
        if cands:
            text = json.dumps(cands[-1])
        else:
            # a candidate dropped after its last attempt has no kernel record; its verdicts are in the run's
            # record (the feedback each attempt got)
            text = "\n".join(p.read_text(errors="replace") for p in runs[0].rglob("*")
                              if p.is_file() and p.suffix in (".json", ".jsonl", ".md") and p.stat().st_size < 8 << 20)
        for kind, pattern in [("timed_run_differs", r"timed launches differ"),
                              ("carries_state", r"state carried between inputs"),
                              ("impossible_time", r"impossibly fast"),
                              ("nondeterministic", r"nondeterministic"),
                              ("out_of_bounds", r"out-of-bounds"),
                              ("wrong_answer", r"wrong answer|elements wrong")]:
            if re.search(pattern, text):
                return kind, secs
        if not cands:
            return f"error: no candidate recorded; {last_line(out)}", secs
        if cands[-1].get("verdict") == "verified":
            # right, but no faster than the original: the run keeps the original
            return "not_faster", secs
        return f"not delivered: {cands[-1].get('verdict')}", secs


TIMING_KINDS = {"impossible_time", "timed_run_differs", "reference_timed_run_differs"}


def attack_once(kt, base, c):
    """One run of attack case `c`: (verdict, whether it is expected, seconds), also printed as it ends (a
    run stopped by a time limit keeps what it did)."""
    v, ok, secs = attack_verdict(kt, base, c)
    print(f"run: {pathlib.Path(c['file']).stem} ({c.get('command', 'verify')}) {'ok' if ok else 'FAIL'} "
          f"{secs:.1f}s {v}", file=sys.stderr, flush=True)
    return v, ok, secs


def attack_verdict(kt, base, c):
    f = str((base / c["file"]).resolve().relative_to(ROOT))
    params = [x for p in c["params"] for x in ("--param", p)]
    command = c.get("command", "verify")
    if command == "transform":
        v, secs = transform_verdict(kt, c, (base / c["file"]).read_text())
        return v, v in c["expect"], secs
    if command == "tune":
        v, secs = tune_verdicts(kt, [f, *c.get("tune_args", ["--test-size"]), *params], c.get("honest_best"))
        ok = v.startswith("delivered") if c["expect"] == ["delivered"] else all(k in c["expect"] for k in v.split("+"))
        return v, ok, secs
    v, secs = verify_attack(kt, [c["reference"], f, *params, *c.get("verify_args", [])])
    return v, v in c["expect"], secs


def runs_alone(c):
    """Whether a case's verdict rests on timing (so it must not share the GPU with other runs)."""
    return c.get("command", "verify") != "verify" or bool(TIMING_KINDS & set(c["expect"])) or "verify_args" in c


def attack_rows(kt, repeat, only=None, shard=None, jobs=1):
    """Each attack case `repeat` times: expected against what kt said, flaky when the runs disagree. `only`:
    a regex the case's label (`file (command)`) must match; `shard` (k, n): every n-th case from the k-th
    (1-based), so a long run splits into calls of bounded time. `jobs` > 1 runs the `kt verify` cases whose
    verdict is about outputs, not times, that many at once (the GPU has room; their checks do not time);
    the others run alone afterwards."""
    from concurrent.futures import ThreadPoolExecutor
    base = ROOT / "tests/corpus/verify/attacks"
    cases = tomllib.loads((base / "attacks.toml").read_text())["case"]
    label_of = lambda c: f"{pathlib.Path(c['file']).stem} ({c.get('command', 'verify')})"
    if only:
        cases = [c for c in cases if re.search(only, label_of(c))]
    if shard:
        k, n = shard
        cases = cases[k - 1::n]
    results = {}
    shared = [(i, r) for i, c in enumerate(cases) if not runs_alone(c) for r in range(repeat)]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for (i, r), got in zip(shared, pool.map(lambda ir: attack_once(kt, base, cases[ir[0]]), shared)):
            results.setdefault(i, []).append(got)
    for i, c in enumerate(cases):
        if runs_alone(c):
            results[i] = [attack_once(kt, base, c) for _ in range(repeat)]
    rows = []
    for i, c in enumerate(cases):
        got = [(v, ok) for v, ok, _ in results[i]]
        total = sum(secs for _, _, secs in results[i])
        command = c.get("command", "verify")
        kinds = sorted({v for v, _ in got})
        # an honest kernel's best configuration may differ between runs (near-ties): delivered is one verdict,
        # unless the case names the one honest configuration
        flaky = len({v if c.get("honest_best") else v.split(" ")[0] for v, _ in got}) > 1
        good = all(ok for _, ok in got) and not flaky
        label = label_of(c)
        counts = ", ".join(f"{k} x{sum(1 for v, _ in got if v == k)}" for k in kinds)
        what = f"expected {'/'.join(c['expect'])}; got {counts}{' FLAKY' if flaky else ''}; {c['why']}"
        rows.append((label, command, "ok" if good else "FAIL", f"{total:.1f}", what.replace("|", "/")))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kt", default=".device/bin/kt")
    ap.add_argument("--out", default="/tmp/corpus-check")
    ap.add_argument("--parts", default="suite,wild,programs,verify,attacks")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each attack case")
    ap.add_argument("--only", help="attack cases whose label (`file (command)`) matches this regex")
    ap.add_argument("--shard", help="K/N: every N-th attack case from the K-th (1-based)")
    ap.add_argument("--jobs", type=int, default=1, help="kt verify attack runs at once (outputs only, not times)")
    a = ap.parse_args()
    shard = tuple(int(x) for x in a.shard.split("/")) if a.shard else None
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

    if "attacks" in parts:
        tables["Reward hacks (tests/corpus/verify/attacks), each run --repeat times"] = attack_rows(kt, a.repeat, a.only, shard, a.jobs)

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
