"""kt.transform and kt.runs. Without a GPU, with the demo's scripted LLM answers: the run goes through Stages 1
and 2 (real generator programs in kt's sandbox) and stops, saved and resumable, where Stage 3 needs a CUDA
GPU, as `kt transform` does; kt.runs then reads its record. With KT_GPU=1 (a GPU machine): the demo's
replayed run finishes from Python with a faster verified kernel, its tuner worker and profiled launches
started through this interpreter. Plain Python, run by tests/run.sh with KT_REPO set to the repository."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import kt
from checks import check, expect_error
from kt._worker import kt_command

REPO = os.environ["KT_REPO"]
MATMUL = os.path.join(REPO, "naive-kernels", "matmul.cu")
GPU = os.environ.get("KT_GPU") == "1"
REPLAY = "replay:" + os.path.join(REPO, "experiments", "cassettes", "matmul-autonomous.jsonl")
SCRIPTED = "scripted:" + os.path.join(REPO, "experiments", "cassettes", "matmul-autonomous.toml")


def isolate(home):
    """No kt.toml, no LLM, runs dir or seed from the caller's environment (as tests/support does)."""
    for name in ("KT_CONFIG", "KT_LLM", "KT_LLM_BASE_URL", "KT_RUNS_DIR", "KT_PROMPTS_DIR", "KT_SEED"):
        os.environ.pop(name, None)
    os.environ["HOME"] = home
    os.environ["XDG_CONFIG_HOME"] = os.path.join(home, "no-config")


def test_kt_command_runs_kts_command_line():
    out = subprocess.run(kt_command() + ["--version"], capture_output=True, text=True)
    check("kt --version through the interpreter", out.returncode == 0 and "kt" in out.stdout, out)
    out = subprocess.run(kt_command() + ["__tuner-worker"], capture_output=True, text=True)
    check("the worker refuses to run by hand", out.returncode == 1 and "error" in out.stderr, out)


def test_transform_stops_where_a_gpu_is_needed_and_runs_reads_the_record(home):
    if GPU:
        return "skipped: KT_GPU=1 (it is about a machine without a GPU)"
    runs_dir = os.path.join(home, "runs")
    stop = expect_error(kt.RunStopped, ["a CUDA GPU is needed", "kt resume"], lambda: kt.transform(
        MATMUL, strategy="autonomous", llm=SCRIPTED, replan=3, tests=1, runs_dir=runs_dir))
    check("the stop names its run", os.path.isfile(os.path.join(stop.path, "run.json")), stop.path)
    run = kt.runs.open(stop.path)
    check("status", run.status == "interrupted" and run.needs_gpu, run.summary)
    check("strategy and settings recorded", run.meta["strategy"] == "autonomous" and run.meta["settings"]["replan"] == 3, run.meta)
    check("result.json says why", "GPU" in run.result["error"] and run.speedup is None, run.result)
    check("nothing best yet", run.best_source is None and not run.correct, run.best_kernel_file)
    listed = kt.runs.list(runs_dir)
    check("kt.runs.list has the run", [r["id"] for r in listed] == [run.summary["id"]], listed)
    check("the list's facts", listed[0]["needs_gpu"] and listed[0]["kernel"] == "matrixMultiply", listed[0])
    by_prefix = kt.runs.open(run.summary["id"][:12], runs_dir=runs_dir)
    check("open by id prefix", by_prefix.path == run.path, by_prefix)


def test_resume_continues_a_stopped_run_and_refuses_one_that_is_not_there(home):
    if GPU:
        return "skipped: KT_GPU=1 (it is about a machine without a GPU)"
    runs_dir = os.path.join(home, "resumed")
    stop = expect_error(kt.RunStopped, ["a CUDA GPU is needed"], lambda: kt.transform(
        MATMUL, llm=SCRIPTED, tests=1, runs_dir=runs_dir))
    check("RunStopped is a KtError", isinstance(stop, kt.KtError) and isinstance(stop, RuntimeError), stop)
    run_id = os.path.basename(stop.path)
    again = expect_error(kt.RunStopped, ["a CUDA GPU is needed", "kt resume"],
                         lambda: kt.resume(run_id[:15], runs_dir=runs_dir))
    check("the same run", again.path == stop.path, again.path)
    expect_error(kt.KtError, ["no run `nope`"], lambda: kt.resume("nope", runs_dir=runs_dir))
    expect_error(ValueError, ["answer"], lambda: kt.resume(stop.path, answer_for="001-stage1.describe"))


def test_the_package_installs_the_kt_command(home):
    command = os.path.join(os.path.dirname(sys.executable), "kt")
    out = subprocess.run([command, "--version"], capture_output=True, text=True)
    check("kt --version", out.returncode == 0 and out.stdout.startswith("kt "), out)
    out = subprocess.run([command, "tune", MATMUL, "--tests", "kt-runs/R/tests", "--dry-run"],
                         capture_output=True, text=True)
    check("the command's own exit status and message", out.returncode == 2 and "--tests-dir" in out.stderr, out)


def test_transform_on_a_gpu_finishes_with_a_faster_verified_kernel(home):
    if not GPU:
        return "skipped: needs a GPU (KT_GPU=1)"
    runs_dir = os.path.join(home, "gpu-runs")
    run = kt.transform(MATMUL, strategy="autonomous", llm=REPLAY, replan=3, runs_dir=runs_dir)
    print(run, run.best_params)
    check("finished", run.status == "finished" and run.stopped is None, run.result)
    check("verified and improved", run.correct and run.outcome == "improved", run.result)
    check("faster", run.speedup > 1.0, run.speedup)
    check("the best kernel's source", "__global__" in run.best_source, run.best_kernel_file)
    check("kt.runs.list agrees", kt.runs.list(runs_dir)[0]["speedup"] == run.speedup, kt.runs.list(runs_dir))


def llm_server(reply=None):
    """A server on 127.0.0.1 that reads each request and sends ``reply`` (raw HTTP), or holds the connection
    open unanswered when there is none; the event is set at the first request."""
    listener = socket.create_server(("127.0.0.1", 0))
    asked = threading.Event()
    held = []

    def serve():
        while True:
            conn, _ = listener.accept()
            conn.recv(65536)
            asked.set()
            if reply is None:
                held.append(conn)
            else:
                conn.sendall(reply.encode())
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], asked


def llm_env(port):
    return dict(KT_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY="test-key")


# The child takes Ctrl-C as an interactive Python does, whatever it inherited: a shell that starts a job in
# the background (`cmd &` without job control) hands its children SIGINT ignored, and Python then installs no
# KeyboardInterrupt handler, so a CI run started that way would never see the signal this test sends.
CALLER = """
import signal, sys, kt
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    kt.transform(sys.argv[1], llm="openai:gpt-4.1", tests=1, runs_dir=sys.argv[2])
except KeyboardInterrupt:
    print("KeyboardInterrupt")
    sys.exit(130)
"""


def test_ctrl_c_saves_the_run_and_raises_keyboard_interrupt(home):
    port, asked = llm_server()
    runs_dir = os.path.join(home, "interrupted")
    env = dict(os.environ, **llm_env(port))
    child = subprocess.Popen([sys.executable, "-c", CALLER, MATMUL, runs_dir], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check("kt.transform asked the LLM", asked.wait(60), "no request in 60 s")
    time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        out, err = child.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError(f"kt.transform still running 10 s after SIGINT: {child.communicate()}")
    took = time.monotonic() - sent
    check("KeyboardInterrupt within 3 s", child.returncode == 130 and took < 3, (child.returncode, took, out, err))
    [run] = kt.runs.list(runs_dir)
    check("the run is saved, interrupted", run["status"] == "interrupted", run)
    check("stderr says how to continue", f"kt resume {run['path']}" in err, err)


def test_an_llm_outage_stops_the_run_resumable(home):
    body = '{"error": {"message": "overloaded"}}'
    port, _ = llm_server(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}")
    runs_dir = os.path.join(home, "outage")
    os.environ.update(llm_env(port))
    try:
        stop = expect_error(kt.RunStopped, ["llm_unavailable", "kt resume"], lambda: kt.transform(
            MATMUL, llm="openai:gpt-4.1", tests=1, runs_dir=runs_dir))
    finally:
        for name in llm_env(port):
            del os.environ[name]
    check("the run is saved", kt.runs.open(stop.path).status == "llm_unavailable", stop.path)


def test_refusals_carry_the_commands_messages(home):
    runs_dir = os.path.join(home, "refused")
    expect_error(kt.KtError, ["needs an LLM", "--llm PROVIDER:MODEL", "kt.toml"],
                 lambda: kt.transform(MATMUL, runs_dir=runs_dir))
    expect_error(kt.KtError, ["greedy", "autonomous", "explicit"],
                 lambda: kt.transform(MATMUL, strategy="greedy", llm=SCRIPTED, runs_dir=runs_dir))
    expect_error(kt.KtError, ["--tests must be at least 1"],
                 lambda: kt.transform(MATMUL, llm=SCRIPTED, tests=0, runs_dir=runs_dir))
    expect_error(kt.KtError, ["is not a file"], lambda: kt.transform("/no/such.cu", llm=SCRIPTED))
    expect_error(ValueError, ["--replan"], lambda: kt.transform(MATMUL, llm=SCRIPTED, replan="many"))
    expect_error(TypeError, ["dry_run"], lambda: kt.transform(MATMUL, dry_run=True))
    check("refused calls make no run", kt.runs.list(runs_dir) == [], kt.runs.list(runs_dir))
    expect_error(FileNotFoundError, ["no run `nope`", "kt runs list"], lambda: kt.runs.open("nope", runs_dir=runs_dir))


def main():
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    with tempfile.TemporaryDirectory(prefix="kt-transform-") as home:
        isolate(home)
        for t in tests:
            skipped = t(home) if t.__code__.co_argcount else t()
            print(f"{skipped or 'ok'}  {t.__name__}")
    print(f"{len(tests)} kt.transform / kt.runs tests passed")


if __name__ == "__main__":
    main()
