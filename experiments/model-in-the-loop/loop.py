#!/usr/bin/env python3
"""A model in kt's loop, round by round, for machines where the GPU and the model never meet.

Every cell (kernel x strategy) is one `kt transform ... --llm manual:DIR --seed 1` run. A manual run stops at
each prompt it has no answer for (exit 3) and wherever it next needs a GPU on a machine without one (exit 2).
This driver moves all cells forward on the machine it runs on, as far as each can go there:

    loop.py start [--cells K:S,...]   create the runs (here, without a GPU: Stage 1 up to its first prompt)
    loop.py step                      resume every cell that can move here, until each waits for an answer,
                                      needs a GPU, or ends; then list the prompts waiting for a model
    loop.py pending [--json]          the prompt files that have no answer yet
    loop.py status                    one line per cell
    loop.py table                     the results as a markdown table
    loop.py pack OUT.tar.gz           the working state to carry back from a GPU machine (no test arrays:
                                      kt makes them again from each test's generator program where it resumes)
    loop.py unpack IN.tar.gz          take a GPU round's state back
    loop.py check-record              check each ended run against its record: every answer it used is a file
                                      in answers/<kernel>/, and `kt replay` (recorded answers and tunings, no
                                      GPU) ends with the same best kernel, parameters and time

A round is: `step` here (the LLM side: Stage 1, validate, breakdown, apply's rewrite, restrictions, ...),
answer the prompts it lists, `step` again until nothing moves here; then `step` on the GPU machine (with the
same files), `pack`, `unpack` here. The prompts of one kernel live in one directory shared by its strategies
(`answers/<kernel>/`), so a question asked twice, word for word (Stage 1 and 2 are the same for every
strategy), is answered once. Prompt and answer files are the run's record: kept unchanged in the repository,
they replay the whole run (`kt transform ... --llm manual:answers/<kernel>`).

Answers come from a model that sees only the prompt file: no repository, no other prompt or answer, no
tools (see README.md beside this file).
"""
import argparse, json, os, pathlib, subprocess, sys, tarfile, time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STATE = ROOT / ".mitl"          # git-ignored working state: the run directories
ANSWERS = HERE / "answers"      # committed: the prompts and the model's answers, per kernel

KERNELS = ["matmul", "matrixTranspose", "assign_clusters", "game_of_life", "matrixAdd", "sigmoidActivation",
           "mandelbrot", "verlet_integration"]
STRATEGIES = {"one-prompt": [], "explicit": [], "autonomous": ["--replan", "3"]}
EXIT_DONE, EXIT_NEEDS_GPU, EXIT_WAITING = 0, 2, 3


def rel(path):
    return os.path.relpath(path, ROOT)


def cell_dir(cell):
    return STATE / "cells" / cell


def run_dir(cell):
    runs = cell_dir(cell) / "runs"
    found = sorted(p for p in runs.iterdir() if (p / "run.json").is_file()) if runs.is_dir() else []
    return found[-1] if found else None


def kernel_of(cell):
    return cell.rsplit(":", 1)[0] if ":" in cell else cell.split("--")[0]


def cells():
    root = STATE / "cells"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def manual(cell):
    return f"manual:{rel(ANSWERS / kernel_of(cell))}"


def log(cell, text):
    with open(cell_dir(cell) / "log.txt", "a") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}\n")


def result(cell):
    run = run_dir(cell)
    try:
        return json.loads((run / "result.json").read_text()) if run else None
    except (OSError, ValueError):
        return None


def state_of(cell):
    """done | failed | needs-gpu | waiting (with the answer file) | new."""
    r = result(cell)
    if r is None:
        return "new", None
    if r.get("status") == "finished":
        return "done", None
    waiting = r.get("waiting_for")
    if waiting:
        return "waiting", waiting
    if r.get("needs_gpu"):
        return "needs-gpu", None
    if r.get("status") in ("failed",):
        return "failed", r.get("error")
    return r.get("status") or "unknown", r.get("error")


def kt(args, binary):
    started = time.time()
    p = subprocess.run([binary, *args], cwd=ROOT, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr, time.time() - started


def start(a):
    chosen = a.cells.split(",") if a.cells else [f"{k}:{s}" for s in STRATEGIES for k in KERNELS]
    for spec in chosen:
        kernel, strategy = spec.split(":")
        cell = f"{kernel}--{strategy}"
        if run_dir(cell):
            print(f"{cell}: exists")
            continue
        cell_dir(cell).mkdir(parents=True, exist_ok=True)
        (ANSWERS / kernel).mkdir(parents=True, exist_ok=True)
        cmd = ["transform", f"naive-kernels/{kernel}.cu", "--strategy", strategy, *STRATEGIES[strategy],
               "--seed", "1", "--llm", manual(cell), "--out", rel(cell_dir(cell) / "runs")]
        rc, out, secs = kt(cmd, a.kt)
        log(cell, f"start rc={rc} {secs:.1f}s")
        if rc == EXIT_NEEDS_GPU:
            (cell_dir(cell) / "parked-without-gpu").write_text(str(answers_known(cell)))
        print(f"{cell}: started, exit {rc} ({secs:.1f} s)")
        if rc not in (EXIT_DONE, EXIT_NEEDS_GPU, EXIT_WAITING):
            print(out[-1500:])


def answered(waiting):
    answer = waiting.get("answer_file")
    return answer and (ROOT / answer).is_file() or (answer and pathlib.Path(answer).is_file())


def prompt_exists(waiting):
    """A prompt file written on another machine may not have travelled: a resume writes it again."""
    prompt = waiting.get("prompt_file") or ""
    return (ROOT / prompt).is_file() or pathlib.Path(prompt).is_file()


def answers_known(cell):
    return len(list((ANSWERS / kernel_of(cell)).glob("*.answer.md")))


def parked(cell):
    """Whether `cell` already went as far as it can without a GPU with the answers it has now."""
    mark = cell_dir(cell) / "parked-without-gpu"
    return mark.is_file() and mark.read_text().strip() == str(answers_known(cell))


def advance(cell, binary, gpu_here, limit=60):
    """Resumes `cell` until it waits for an unanswered prompt, needs a GPU that is not here, or ends. Without
    a GPU, a run that needs one is resumed once for the LLM work it can do first (kt stops it again at its
    next GPU step), and not again until new answers arrive."""
    retried = False
    for _ in range(limit):
        state, detail = state_of(cell)
        if state == "waiting" and not answered(detail) and prompt_exists(detail):
            return state
        if state == "needs-gpu" and not gpu_here and parked(cell):
            return state
        if state == "failed" and gpu_here and not retried:
            retried = True  # a failure of the machine (a full disk) goes away with the next one
        elif state not in ("waiting", "needs-gpu", "interrupted", "llm_unavailable"):
            return state
        rc, out, secs = kt(["resume", str(run_dir(cell)), "--llm", manual(cell)], binary)
        log(cell, f"resume rc={rc} {secs:.1f}s state-before={state}")
        if rc not in (EXIT_DONE, EXIT_NEEDS_GPU, EXIT_WAITING):
            (cell_dir(cell) / "last-error.txt").write_text(out)
            return f"error (exit {rc}; {rel(cell_dir(cell) / 'last-error.txt')})"
        if rc == EXIT_NEEDS_GPU and not gpu_here:
            (cell_dir(cell) / "parked-without-gpu").write_text(str(answers_known(cell)))
            return "needs-gpu"
    return "step limit"


def gpu_present():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


def drop_arrays(cell):
    """On the GPU machine, a cell's arrays go once it has moved: they do not travel back, the next round makes
    them again, and a dozen cells' tests would fill the machine's disk."""
    run = run_dir(cell)
    if run:
        for npy in run.rglob("*.npy"):
            npy.unlink(missing_ok=True)


STEP_ORDER = {"autonomous": 0, "explicit": 1, "one-prompt": 2}


def step(a):
    """Moves every cell, `--jobs` at a time (cells side by side on one GPU: their timings share it, so a
    round's speedups are noisier than a lone run's; the end-of-run figures are re-measured by kt itself);
    with --deadline, no cell is started after that many seconds (a GPU lease is short), the flagship strategy
    first."""
    from concurrent.futures import ThreadPoolExecutor
    gpu_here = gpu_present()
    began = time.time()

    def move(cell):
        if a.deadline and time.time() - began > a.deadline:
            print(f"{cell:40s} not moved: the round's {a.deadline:.0f} s deadline passed", flush=True)
            return
        started = time.time()
        state = advance(cell, a.kt, gpu_here)
        if gpu_here:
            drop_arrays(cell)
        print(f"{cell:40s} {state}  ({time.time() - started:.1f} s)", flush=True)

    order = sorted(cells(), key=lambda c: (STEP_ORDER.get(c.split("--")[-1], 9), c))
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        list(pool.map(move, order))
    pending(argparse.Namespace(json=False))


def pending_prompts():
    out = []
    for cell in cells():
        state, waiting = state_of(cell)
        if state == "waiting" and not answered(waiting):
            prompt = waiting.get("prompt_file")
            out.append({"cell": cell, "prompt": prompt, "answer": waiting.get("answer_file"),
                        "node": waiting.get("node")})
    # one entry per prompt file: cells of one kernel may wait on the same question
    unique = {}
    for p in out:
        unique.setdefault(p["prompt"], p)
    return list(unique.values())


def pending(a):
    items = pending_prompts()
    if a.json:
        print(json.dumps(items, indent=1))
        return
    print(f"{len(items)} prompt(s) wait for an answer")
    for p in items:
        print(f"  {p['node']:28s} {p['prompt']}")


def status(a):
    for cell in cells():
        state, detail = state_of(cell)
        r = result(cell) or {}
        extra = ""
        if state == "done":
            extra = f"speedup {r.get('speedup')} correct {r.get('correct')} outcome {r.get('outcome')}"
        elif detail and state != "waiting":
            extra = str(detail)[:160]
        print(f"{cell:40s} {state:10s} {extra}")


def llm_records(cell):
    run = run_dir(cell)
    try:
        lines = (run / "llm.jsonl").read_text().splitlines()
    except (OSError, TypeError):
        return []
    records = [json.loads(line) for line in lines if line.strip()]
    # a call that stopped the run to wait for its answer is recorded too, without one: not a model call
    return [r for r in records if (r.get("answer") or "").strip()]


def llm_calls(cell):
    return len(llm_records(cell))


def llm_tokens(cell):
    """Input and output tokens of the run's LLM calls (estimated by kt for answers given through files)."""
    usage = [r.get("usage") or {} for r in llm_records(cell)]
    return sum(u.get("input_tokens") or 0 for u in usage), sum(u.get("output_tokens") or 0 for u in usage)


def gpu_rounds(cell):
    """How many times the cell was moved on a GPU machine (resumed from needs-gpu, and not needing it again)."""
    try:
        lines = (cell_dir(cell) / "log.txt").read_text().splitlines()
    except OSError:
        return 0
    # a resume without a GPU exits 2 again at once; one on a GPU machine never does
    return sum(1 for line in lines if "state-before=needs-gpu" in line and " rc=2 " not in line)


def table(a):
    """The results table (markdown): one row per cell."""
    print("| kernel | strategy | state | speedup (tuned, 3 tests) | 95 % interval (first test) | gain | % of "
          "binding ceiling | LLM calls (kt's own record) | tokens in / out (estimated) | GPU rounds | "
          "steps tried / accepted | kt wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cell in cells():
        kernel, strategy = cell.split("--")
        state, _ = state_of(cell)
        r = result(cell) or {}
        steps = r.get("steps") or []
        accepted = sum(1 for s in steps if s.get("accepted"))
        ci = r.get("speedup_ci95")
        fmt = lambda v, f: (f.format(v) if isinstance(v, (int, float)) else "–")
        print(f"| {kernel} | {strategy} | {state} | {fmt(r.get('speedup'), '{:.2f}×')} | "
              f"{'–' if not ci else f'{ci[0]:.2f}–{ci[1]:.2f}'} | {fmt(r.get('gain'), '{:+.1%}')} | "
              f"{fmt(r.get('percent_of_peak'), '{:.0f} %')} | {llm_calls(cell)} | "
              f"{llm_tokens(cell)[0]:,} / {llm_tokens(cell)[1]:,} | {gpu_rounds(cell)} | {len(steps)} / {accepted} | "
              f"{fmt((r.get('wall_time_s') or {}).get('total'), '{:.1f}')} |")


def skip_bulk(info):
    """Arrays and compiled modules stay behind; manifests and generator programs travel."""
    name = info.name
    # arrays: the tests' (made again where the run resumes) and the Kernel Tuner export's copies of them
    if name.endswith(".npy") or info.islnk() or info.issym():
        return None
    if "/tuning/" in name and name.endswith((".cubin", ".bin")):
        return None
    return info


def pack(a):
    with tarfile.open(a.file, "w:gz") as t:
        t.add(STATE, arcname=".mitl", filter=skip_bulk)
        t.add(ANSWERS, arcname=rel(ANSWERS))
    print(f"{a.file}: {pathlib.Path(a.file).stat().st_size / 1e6:.1f} MB")


def unpack(a):
    with tarfile.open(a.file) as t:
        t.extractall(ROOT, filter="data")
    print(f"unpacked {a.file}")


def answer_files(kernel):
    # kt reads an answer file without its surrounding whitespace
    return {f.read_text().strip() for f in (ANSWERS / kernel).glob("*.answer.md")}


def best_at(run, checkpoint, binary):
    """The `best` field of the run's Stage 3 state at a checkpoint (`head`: as recorded; `latest`: after a replay)."""
    p = subprocess.run([binary, "debug", "state", str(run), "--at", checkpoint, "--field", "best", "--json"],
                       capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else None


def check_record(a):
    """Every ended run: its answers are the files of record, and replaying it gives the same best kernel."""
    import shutil, tempfile
    failures = 0
    for cell in cells():
        if state_of(cell)[0] != "done":
            print(f"{cell:40s} not ended: skipped"); failures += 1
            continue
        files = answer_files(kernel_of(cell))
        records = llm_records(cell)
        missing = [r["node"] for r in records if (r.get("answer") or "").strip() not in files]
        with tempfile.TemporaryDirectory() as tmp:
            run = pathlib.Path(shutil.copytree(run_dir(cell), pathlib.Path(tmp) / run_dir(cell).name))
            p = subprocess.run([a.kt, "replay", str(run), "--json"], capture_output=True, text=True)
            finished = p.returncode == 0 and json.loads(p.stdout).get("outcome") == "finished"
            recorded, replayed = best_at(run, "head", a.kt), best_at(run, "latest", a.kt)
        same = finished and recorded is not None and recorded == replayed
        ok = same and not missing
        failures += not ok
        print(f"{cell:40s} answers {len(records) - len(missing)}/{len(records)} in answers/{kernel_of(cell)}/, "
              f"replay {'finished' if finished else 'FAILED'}, best "
              f"{'the same' if same else 'DIFFERENT'}"
              + (f" ({recorded['time_ms']:.4f} ms)" if same else "")
              + (f"; not in the record: {', '.join(missing)}" if missing else ""))
    print(f"{len(cells()) - failures} of {len(cells())} runs check against their record")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kt", default=str(ROOT / "target/release/kt"))
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start"); s.add_argument("--cells"); s.set_defaults(f=start)
    st = sub.add_parser("step")
    st.add_argument("--deadline", type=float, help="seconds after which no further cell is moved")
    st.add_argument("--jobs", type=int, default=1, help="cells moved at once (side by side on the GPU)")
    st.set_defaults(f=step)
    p = sub.add_parser("pending"); p.add_argument("--json", action="store_true"); p.set_defaults(f=pending)
    sub.add_parser("status").set_defaults(f=status)
    sub.add_parser("table").set_defaults(f=table)
    k = sub.add_parser("pack"); k.add_argument("file"); k.set_defaults(f=pack)
    u = sub.add_parser("unpack"); u.add_argument("file"); u.set_defaults(f=unpack)
    sub.add_parser("check-record").set_defaults(f=check_record)
    a = ap.parse_args()
    return a.f(a)


if __name__ == "__main__":
    sys.exit(main())
