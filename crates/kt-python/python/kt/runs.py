"""``kt.runs``: the recorded runs of a runs directory (default: ``$KT_RUNS_DIR``, else ``./kt-runs``), read by
kt's own catalog code::

    for r in kt.runs.list():            # the facts `kt runs list` shows, one dict per run, oldest first
        print(r["id"], r["status"], r["speedup"])
    run = kt.runs.open("20261126T0701")  # a run directory, or a run id or a unique prefix of one
    print(run.speedup, run.best_params, run.best_source)
"""

import json

from . import _kt
from ._run import Run


def list(runs_dir=None):  # noqa: A001 (kt.runs.list, as `kt runs list`)
    """Every run under ``runs_dir``: dicts with id, path, kernel, strategy, model, status, speedup, gain,
    outcome, needs_gpu, started, duration_s and problem (why a run's files could not be read)."""
    return json.loads(_kt.runs_list(_path(runs_dir)))


def open(run, runs_dir=None):  # noqa: A001 (kt.runs.open)
    """The run ``run`` names (a run directory, or a run id or unique id prefix under ``runs_dir``) as a
    ``kt.Run``. Raises FileNotFoundError when there is no such run, ValueError when a prefix is ambiguous."""
    return Run.from_json(_kt.runs_open(str(run), _path(runs_dir)))


def _path(p):
    return None if p is None else str(p)
