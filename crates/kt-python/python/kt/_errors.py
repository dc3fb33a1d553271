"""kt's exceptions. ``KtError`` (defined by the compiled module, a RuntimeError) is the base of everything kt
could not do: a run that failed, no CUDA GPU for ``tune_kernel``, a worker that would not start; its message is
the ``kt`` command's. Bad arguments raise ValueError or TypeError."""

from ._kt import KtError


class RunStopped(KtError):
    """A run that is saved and resumable but could not go on here (no CUDA GPU, the LLM service is down).
    ``path`` is its run directory: ``kt.resume(path)`` or ``kt resume PATH`` continues it, ``kt.runs.open(path)``
    reads it."""

    def __init__(self, message, path):
        super().__init__(message)
        self.path = path
