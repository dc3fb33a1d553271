"""One recorded run, as ``kt.transform`` returns it and ``kt.runs.open`` reads it: its directory, run.json
(``meta``), result.json (``result``, None until the run writes it), the facts ``kt runs list`` shows
(``summary``) and, for the common questions, attributes."""

import json


class Run:
    def __init__(self, record, stopped=None):
        self.path = record["path"]
        self.meta = record["meta"]
        self.result = record["result"]
        self.summary = record["summary"]
        self.best_kernel_file = record["best_cu"]
        # why the run stopped before its end (a `manual:` prompt, Ctrl-C) and how to continue it
        self.stopped = stopped

    def _field(self, name, default=None):
        return (self.result or {}).get(name, default)

    @property
    def status(self):
        """running, finished, failed or interrupted."""
        return self.summary["status"]

    @property
    def speedup(self):
        """The naive kernel's time over the best one's (None until measured)."""
        return self._field("speedup")

    @property
    def correct(self):
        """The best kernel passed every test."""
        return bool(self._field("correct", False))

    @property
    def outcome(self):
        """improved, no_improvement or not_verified for a finished run."""
        return self._field("outcome")

    @property
    def best_params(self):
        """The best kernel's tuned parameters."""
        return dict(self._field("best_params", {}))

    @property
    def needs_gpu(self):
        """The run stopped where a CUDA GPU is needed (``kt resume`` on a GPU machine continues it)."""
        return self.summary["needs_gpu"]

    @property
    def best_source(self):
        """The best kernel's CUDA source (None when the run wrote none)."""
        if not self.best_kernel_file:
            return None
        with open(self.best_kernel_file, encoding="utf-8") as f:
            return f.read()

    def __repr__(self):
        speedup = f"{self.speedup:.2f}x" if self.speedup else "-"
        return f"<kt.Run {self.summary['id']} {self.status} speedup {speedup} at {self.path}>"

    @classmethod
    def from_json(cls, text, stopped=None):
        return cls(json.loads(text), stopped)
