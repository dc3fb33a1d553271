"""``kt.transform`` and ``kt.resume``: the ``kt transform`` and ``kt resume`` commands from Python. The settings
go to the commands' own code as typed values (the same strategies, LLM providers, defaults, checks and
messages); the run is recorded in its run directory as the command records it, and comes back as a ``kt.Run``.
"""

import json
import os

from . import _kt
from ._errors import KtError, RunStopped
from ._run import Run
from ._worker import kt_command


def _whole(name, value):
    """``value`` as a whole number >= 0, or None; a ValueError naming the command's flag otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value), 10)
        except ValueError:
            raise ValueError(
                f"--{name.replace('_', '-')}: {name}={value!r} is not a whole number") from None
    if value < 0:
        raise ValueError(f"--{name.replace('_', '-')}: {name}={value} is negative")
    return value


def _path(value):
    return None if value is None else os.fspath(value)


def _paths(values):
    if isinstance(values, (str, os.PathLike)):
        values = [values]
    return [os.fspath(v) for v in values]


def _run_or_raise(text, what):
    reply = json.loads(text)
    error = reply.get("error")
    if error is None:
        run = reply["run"]
        return Run.from_json(_kt.runs_open(run["path"]), stopped=run["stopped"])
    if error["kind"] == "usage":
        raise ValueError(f"{what}: {error['message']}")
    if error["kind"] == "stopped":
        raise RunStopped(error["message"], error["run"])
    raise KtError(error["message"])


def transform(
    kernel_file,
    strategy=None,
    llm=None,
    kernel=None,
    replan=None,
    breakdown=None,
    candidates=None,
    tests=None,
    runs_dir=None,
    prompts=None,
    seed=None,
    include=(),
    allow_unsandboxed=False,
    stream=True,
    progress=False,
):
    """Runs ``kt transform KERNEL_FILE`` and returns the run as a ``kt.Run`` (``speedup``, ``correct``,
    ``outcome``, ``best_params``, ``best_source``, ``path``, ``result``).

    Every setting left at None takes the command's default. strategy: one-prompt, explicit, autonomous (the
    default) or a strategy .toml; llm: ``PROVIDER:MODEL`` (openai:gpt-4.1,
    anthropic:claude-sonnet-4, replay:CASSETTE.jsonl, scripted:ANSWERS.toml; default: kt.toml's [llm] or
    KT_LLM); replan, breakdown, candidates: the strategy's settings; tests: how many generated tests (3);
    runs_dir: where the run directory goes (default $KT_RUNS_DIR, else ./kt-runs); seed, prompts, include
    (header directories), allow_unsandboxed and stream as the command's flags; progress: the command's live
    view on stderr.

    A run that stops where it cannot go on here (no CUDA GPU, the LLM service down) is saved and raises
    ``kt.RunStopped`` with its ``path`` (``kt.resume(path)`` continues it); one that fails raises
    ``kt.KtError``; bad arguments raise ValueError. A run stopped on purpose (a ``manual:`` prompt) returns
    with ``run.stopped`` saying how to continue it. Ctrl-C saves the run at its last checkpoint and raises
    KeyboardInterrupt.
    """
    text = _kt.transform(
        os.fspath(kernel_file),
        kt_command(),
        strategy=None if strategy is None else os.fspath(strategy),
        kernel=kernel,
        replan=_whole("replan", replan),
        breakdown=_whole("breakdown", breakdown),
        candidates=_whole("candidates", candidates),
        tests=_whole("tests", tests),
        llm=llm,
        stream=bool(stream),
        runs_dir=_path(runs_dir),
        prompts=_path(prompts),
        seed=_whole("seed", seed),
        allow_unsandboxed=bool(allow_unsandboxed),
        include=_paths(include),
        progress=bool(progress),
    )
    return _run_or_raise(text, "kt.transform")


def resume(
    run,
    llm=None,
    answer=None,
    answer_for=None,
    runs_dir=None,
    include=(),
    prompts=None,
    stream=True,
    wait=False,
    trust_run=False,
    progress=False,
):
    """Continues a stopped run as ``kt resume RUN`` does and returns it as a ``kt.Run``.

    run: a run directory, a ``kt.Run``, or a run id or unique prefix of one (looked up under runs_dir, else
    $KT_RUNS_DIR, else ./kt-runs). llm: another LLM than the one the run recorded; answer (a file) and
    answer_for (the prompt's id): the answer to the prompt a ``manual:`` run waits for; include: header
    directories in place of the recorded ones (a run handed over from a clone at another path); wait, trust_run,
    stream and prompts as the command's flags. Raises as ``kt.transform`` does.
    """
    if isinstance(run, Run):
        run = run.path
    text = _kt.resume(
        os.fspath(run),
        kt_command(),
        llm=llm,
        stream=bool(stream),
        runs_dir=_path(runs_dir),
        prompts=_path(prompts),
        answer=_path(answer),
        answer_for=answer_for,
        include=_paths(include),
        wait=bool(wait),
        trust_run=bool(trust_run),
        progress=bool(progress),
    )
    return _run_or_raise(text, "kt.resume")
