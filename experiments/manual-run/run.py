#!/usr/bin/env python3
"""Issue 14's manual provider end to end on a GPU: `kt transform --llm manual:DIR` stops at each prompt; an
answer is written to a file and `kt resume RUN --answer FILE` goes on to the next prompt, until the run finishes.

    python3 experiments/manual-run/run.py [--kt .device/bin/kt] [--out DIR]

The answers are the hand-written ones of experiments/scripted/vectorAdd.toml, taken per node in file order (the
person at the keyboard, played by a script). Prints every stop and the finished run's result.
"""
import argparse, collections, json, pathlib, subprocess, sys, tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kt", default=".device/bin/kt")
    ap.add_argument("--out", default="/tmp/kt-manual-run")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    prompts, runs = out / "prompts", out / "runs"
    answers = collections.defaultdict(collections.deque)
    for entry in tomllib.loads((ROOT / "experiments/scripted/vectorAdd.toml").read_text())["answers"]:
        answers[entry["node"]].append(entry["text"])
    manual = f"manual:{prompts}"
    cmd = [a.kt, "transform", "naive-kernels/vectorAdd.cu", "--strategy", "autonomous", "--replan", "1",
           "--tests", "1", "--llm", manual, "--out", str(runs)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    run = next(runs.iterdir())
    stops = 0
    while p.returncode == 3 and stops < 40:
        result = json.loads((run / "result.json").read_text())
        waiting = result["waiting_for"]
        node = waiting["node"]
        if not answers[node]:
            print(f"no scripted answer left for {node}; stopping")
            return 1
        stops += 1
        answer = out / f"answer-{stops:02d}.md"
        answer.write_text(answers[node].popleft())
        print(f"stop {stops}: {node} waits on {pathlib.Path(waiting['prompt_file']).name}; answered from the script")
        p = subprocess.run([a.kt, "resume", str(run), "--answer", str(answer), "--llm", manual],
                           cwd=ROOT, capture_output=True, text=True)
    result = json.loads((run / "result.json").read_text())
    print(f"exit {p.returncode} after {stops} answered prompts: status {result.get('status')}, outcome "
          f"{result.get('outcome')}, correct {result.get('correct')}, speedup {result.get('speedup')} "
          f"(95% {result.get('speedup_ci95')}), gain {result.get('gain')}")
    if p.returncode != 0:
        print(p.stderr[-2000:])
    return 0 if p.returncode == 0 and result.get("status") == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())
