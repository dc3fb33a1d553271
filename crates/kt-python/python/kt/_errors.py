"""The exceptions of ``kt.transform``. Bad arguments raise ValueError; the messages are the ``kt`` command's."""


class KtError(RuntimeError):
    """A run that failed: kt's error report, as the ``kt`` command prints it."""


class RunStopped(KtError):
    """A run that is saved and resumable but could not go on here (no CUDA GPU, the LLM service is down).
    ``path`` is its run directory: ``kt resume PATH`` continues it, ``kt.runs.open(PATH)`` reads it."""

    def __init__(self, message, path):
        super().__init__(message)
        self.path = path
