#!/usr/bin/env python3
"""Turns what run.sh collected into the table of answer styles (markdown on stdout).

    summarize.py OUT            reads OUT/styles/<style>.{json,err,rc} and OUT/context.json
    summarize.py --self-test    checks the classification on made-up reports (no kt, no GPU)

Per style, `kt debug node RUN apply --llm scripted:<style>.toml --json` left:
- <style>.json: kt-runs' NodeReport (empty when kt failed);
- <style>.err: kt's log (KT_LOG=warn,kt_pipeline=info): the notes kt made while reading the answer and the
  warning about each failed attempt, whose first one is kt's verdict on the style's answer (each script
  holds one answer, so a retry finds the script empty);
- <style>.rc: kt's exit status (124 or 137: run.sh's time limit).
"""

import json
import re
import sys
import tempfile
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# `node attempt failed attempt=1 ... error=step `S`: KIND: FEEDBACK` (kt-pipeline's CandidateFailed).
FIRST_FAILURE = re.compile(r"node attempt failed attempt=1 .*?error=step `[^`]*`: ([^:]+): (.*)$")
TEXT_LIMIT = 400

# The failure kinds kt-pipeline reports (FailureKind's Display), as the table names them.
KIND_OUTCOME = {
    "unusable answer": "dropped (unusable answer)",
    "rewrite refused": "refused",
    "compile error": "compile error",
    "wrong answer": "wrong results",
    "timeout": "timed out on the GPU",
    "crash": "crashed",
    "no valid configuration": "no valid configuration",
    "LLM unavailable": "dropped (script empty)",
}


def log_lines(err_text):
    return [ANSI.sub("", l).strip() for l in err_text.splitlines() if l.strip()]


def notes_of(lines):
    """kt's notes about the answer: the step-tagged INFO lines (lenient repairs, dropped host code, names)."""
    notes = []
    for line in lines:
        if " INFO " not in line or " step=" not in line:
            continue
        message = line.split(" INFO ", 1)[1]
        text, _, fields = message.partition(" step=")
        repairs = re.search(r"repairs=(\[.*\])", fields)
        if repairs:
            try:
                text = "read leniently: " + "; ".join(compact(json.loads(repairs.group(1))))
            except json.JSONDecodeError:
                text = "read leniently: " + repairs.group(1)
        notes.append(text)
    return notes


def compact(repairs):
    """One entry for all `$.path: "16" read as 16` coercions, the other repairs as they are."""
    quoted = [r for r in repairs if re.fullmatch(r'\$\S*: "(-?\d+)" read as \1', r)]
    rest = [r for r in repairs if r not in quoted]
    if len(quoted) > 1:
        rest.append(f"{len(quoted)} numbers given as strings read as numbers ({quoted[0].split(':')[0]}, ...)")
    else:
        rest += quoted
    return rest


def first_failure(lines):
    for line in lines:
        m = FIRST_FAILURE.search(line)
        if m:
            return m.group(1).strip(), m.group(2).strip()
    return None


def one_line(text, limit=TEXT_LIMIT):
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def classify(report, err_text, rc, time_limit=None):
    """(outcome, tuned?, detail, what kt said) for one style."""
    lines = log_lines(err_text)
    if rc in (124, 137):  # timeout's TERM, then its KILL after --kill-after
        return ("not finished", False, "", f"stopped by run.sh after {time_limit or '?'} s")
    notes = notes_of(lines)
    if report is None:
        errors = [l for l in lines if l.startswith("error:")]
        said = errors[-1] if errors else (lines[-1] if lines else f"kt exited with {rc} and printed nothing")
        # `error: run `R`: run `R`: node `apply` failed at step N after 1 attempt(s): WHY` -> WHY
        said = re.sub(r"^error: (run `[^`]*`: )*(node `[^`]*` failed [^:]*: )?", "", said)
        # On a machine without a GPU (a dry run of run.sh) the answer got through everything before tuning.
        if "a CUDA GPU is needed" in said:
            return ("reached tuning (no GPU here)", False, "", one_line("; ".join(notes) or "taken as given"))
        if notes:
            said = f"{said} (notes: {'; '.join(notes)})"
        return ("kt failed", False, "", one_line(said))
    labels = [c.get("label") for c in report.get("calls", [])]
    if "stage3.code_parameters" in labels:
        notes.insert(0, "code-first: took the code block and asked for its parameters separately")
    candidates = report.get("update", {}).get("candidates") or []
    c = candidates[0] if candidates else {}
    outcome = c.get("outcome") or {}
    if outcome.get("verdict") == "verified":
        params = ", ".join(f"{k}={v}" for k, v in sorted(outcome.get("best_params", {}).items()))
        tried = outcome.get("configs_tried", 0)
        detail = f"{outcome.get('time_ms', float('nan')):.3f} ms at {params} ({tried} configurations)"
        tuned = tried >= 2
        said = "; ".join(notes) if notes else "taken as given"
        return ("verified, tuned" if tuned else "verified, not tuned", tuned, detail, one_line(said))
    failed = first_failure(lines)
    if failed:
        kind, feedback = failed
    else:
        # No log line: the first attempt's kind is unknown (the candidate's kind is the last attempt's).
        kind = ""
        feedback = (c.get("feedback") or [c.get("failure") or "no candidate in the update"])[0]
    said = feedback if not notes else f"{feedback} (notes: {'; '.join(notes)})"
    return (KIND_OUTCOME.get(kind, kind or "dropped"), False, "", one_line(said))


def title_of(toml_path):
    """The first comment paragraph of a style file: `# a. Baseline: ...`."""
    try:
        lines = Path(toml_path).read_text().splitlines()
    except OSError:
        return Path(toml_path).stem
    title = []
    for line in lines:
        text = line.lstrip("#").strip()
        if not line.startswith("#") or not text:
            break
        title.append(text)
    return " ".join(title) or Path(toml_path).stem


def table(out):
    out = Path(out)
    context = json.loads((out / "context.json").read_text())
    rows, tuned_count = [], 0
    for style in context["styles"]:
        base = out / "styles" / style["name"]
        text = base.with_suffix(".json").read_text() if base.with_suffix(".json").exists() else ""
        try:
            report = json.loads(text) if text.strip() else None
        except json.JSONDecodeError:
            report = None
        err = base.with_suffix(".err").read_text(errors="replace") if base.with_suffix(".err").exists() else ""
        rc_file = base.with_suffix(".rc")
        rc = int(rc_file.read_text().strip() or 1) if rc_file.exists() else None
        if rc is None:
            rows.append((style["name"], title_of(style["file"]), "not run", "", "run.sh's time budget ran out"))
            continue
        outcome, tuned, detail, said = classify(report, err, rc, context.get("style_timeout_s"))
        tuned_count += tuned
        rows.append((style["name"], title_of(style["file"]), outcome, detail, said))
    lines = [
        "# Answer styles on the demo's first `apply`",
        "",
        f"Run: `{context['run']}` ({context.get('source', '?')}), checkpoint #{context['at']} (the state before the first `apply`: step "
        f"\"{context.get('step', '?')}\"). Device: {context.get('device', '?')}. kt: `{context.get('kt_version', '?')}`.",
        f"Naive kernel (the run's reference): {context.get('naive', '?')}.",
        f"The recorded demo answer at the same checkpoint (replayed): {context.get('recorded', '?')}.",
        "",
        "Each style answers the step once (`kt debug node RUN apply --at N --llm scripted:experiments/answer-styles/"
        "<style>.toml`); times are the tuning objective (sum of per-test medians).",
        "",
        "| style | answer | outcome | best | what kt said |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {n} | {one_line(t, 160)} | {o} | {d} | {s} |" for n, t, o, d, s in rows]
    lines += ["", f"{tuned_count} of {len(rows)} styles ended in a verified, tuned kernel"]
    return "\n".join(lines) + "\n"


def recorded_summary(report_text):
    """One line about the replayed recorded answer (run.sh's control)."""
    try:
        report = json.loads(report_text)
    except json.JSONDecodeError:
        return "not available"
    outcome, _, detail, _ = classify(report, "", 0)
    return f"{outcome}, {detail}" if detail else outcome


def self_test():
    verified = {
        "calls": [{"label": "stage3.apply"}, {"label": "stage3.code_parameters"}, {"label": "stage3.restrictions"}],
        "update": {"candidates": [{"attempts": 1, "feedback": [], "outcome": {
            "verdict": "verified", "time_ms": 12.5, "best_params": {"block_size_y": 8, "block_size_x": 32},
            "configs_tried": 9}}]},
    }
    o, tuned, detail, said = classify(verified, "\x1b[2mT\x1b[0m \x1b[32m INFO\x1b[0m rewrite read leniently "
                                      "step=tunable block size repairs=[\"ignored trailing commas (2)\"]\n", 0)
    assert (o, tuned) == ("verified, tuned", True), o
    assert detail == "12.500 ms at block_size_x=32, block_size_y=8 (9 configurations)", detail
    assert said.startswith("code-first") and "ignored trailing commas (2)" in said, said

    dropped = {"calls": [], "update": {"candidates": [{"attempts": 3, "failure_kind": "llm_unavailable",
                                                       "feedback": ["the answer could not be used: no JSON", "x"],
                                                       "outcome": None}]}}
    err = ("2026 WARN node attempt failed attempt=1 will_retry=true error=step `tunable block size`: rewrite "
           "refused: kt refused the rewrite: the code contains `<<<` (a kernel launch)\n"
           "2026 WARN node attempt failed attempt=2 will_retry=true error=step `s`: LLM unavailable: empty\n")
    assert compact(['$.a[0]: "16" read as 16', "ignored trailing commas (1)", '$.a[1]: "8" read as 8']) == [
        "ignored trailing commas (1)", "2 numbers given as strings read as numbers ($.a[0], ...)"]
    o, tuned, _, said = classify(dropped, err, 0)
    assert (o, tuned) == ("refused", False) and said.startswith("kt refused the rewrite"), (o, said)
    o, _, _, said = classify(dropped, "", 0)
    assert o == "dropped" and said == "the answer could not be used: no JSON", (o, said)

    o, _, _, said = classify(None, "WARN x\nerror: run `r/stage3`: run `r/stage3`: node `apply` failed at step 6 "
                                   "after 1 attempt(s): a CUDA GPU is needed from here on\n", 1)
    assert (o, said) == ("reached tuning (no GPU here)", "taken as given"), (o, said)
    o, _, _, said = classify(None, "error: no such run\n", 2)
    assert (o, said) == ("kt failed", "no such run"), (o, said)
    assert classify(None, "", 124, 90)[0] == "not finished"
    assert one_line("a | b\n c") == "a \\| b c"
    assert recorded_summary(json.dumps(verified)).startswith("verified, tuned, 12.500 ms")

    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "styles").mkdir()
        (d / "a.toml").write_text("# a. Baseline: prose\n# and a fence.\n#\n# More.\n")
        (d / "b.toml").write_text("# b. Trailing commas.\n")
        (d / "c.toml").write_text("# c. Never run.\n")
        (d / "styles" / "a.json").write_text(json.dumps(verified))
        (d / "styles" / "a.rc").write_text("0\n")
        (d / "styles" / "b.json").write_text("")
        (d / "styles" / "b.err").write_text("error: boom\n")
        (d / "styles" / "b.rc").write_text("1\n")
        styles = [{"name": n, "file": str(d / f"{n}.toml")} for n in "abc"]
        (d / "context.json").write_text(json.dumps({"run": "R", "at": 6, "styles": styles}))
        md = table(d)
        assert title_of(d / "a.toml") == "a. Baseline: prose and a fence."
        assert "| a | a. Baseline: prose and a fence. | verified, tuned |" in md, md
        assert "| b | b. Trailing commas. | kt failed |  | boom |" in md, md
        assert "| c | c. Never run. | not run |" in md, md
        assert md.rstrip().endswith("1 of 3 styles ended in a verified, tuned kernel"), md
    print("summarize.py self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) == 3 and argv[1] == "--recorded":
        print(recorded_summary(Path(argv[2]).read_text() if Path(argv[2]).exists() else ""))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(table(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
