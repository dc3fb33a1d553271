"""``kt.transform``: the ``kt transform`` command from Python. The arguments become its command line and go
through the command's own code (the same strategies, LLM providers, defaults, checks and messages); the run
is recorded in its run directory as the command records it, and comes back as a ``kt.Run``.
"""

import json
import os

from . import _kt
from ._errors import KtError, RunStopped
from ._run import Run
from ._worker import kt_command


def _flags(**settings):
    """``--name value`` for each setting given (None: the command's default); lists repeat the flag."""
    out = []
    for name, value in settings.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, os.fspath(v)]
        else:
            out += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return out


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
    ``kt.RunStopped`` with its ``path``; one that fails raises ``kt.KtError``; bad arguments raise
    ValueError. A run stopped on purpose (a ``manual:`` prompt) returns with ``run.stopped`` saying how to
    continue it. Ctrl-C saves the run at its last checkpoint and raises KeyboardInterrupt.
    """
    if isinstance(include, (str, os.PathLike)):
        include = [include]
    args = [os.fspath(kernel_file)] + _flags(
        strategy=strategy,
        llm=llm,
        kernel=kernel,
        replan=replan,
        breakdown=breakdown,
        candidates=candidates,
        tests=tests,
        runs_dir=runs_dir,
        prompts=prompts,
        seed=seed,
        include=list(include),
        allow_unsandboxed=allow_unsandboxed,
        no_stream=not stream,
    )
    reply = json.loads(_kt.transform(args, kt_command(), progress))
    error = reply.get("error")
    if error is None:
        run = reply["run"]
        return Run.from_json(_kt.runs_open(run["path"]), stopped=run["stopped"])
    if error["kind"] == "usage":
        raise ValueError(f"kt.transform: {error['message']}")
    if error["kind"] == "stopped":
        raise RunStopped(error["message"], error["run"])
    raise KtError(error["message"])
