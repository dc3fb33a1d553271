"""Names of Kernel Tuner's API that kt does not have, kept so that a script switched to kt with ``import kt as
kernel_tuner`` fails at the line that uses one, with the reason, rather than at an import."""


def unsupported(qualname, why):
    """A class standing for Kernel Tuner's ``qualname``: making one raises NotImplementedError with ``why``."""

    class Unsupported:
        def __init__(self, *args, **kwargs):
            raise NotImplementedError(f"kt has no {qualname}: {why}")

    Unsupported.__name__ = Unsupported.__qualname__ = qualname.rsplit(".", 1)[-1]
    Unsupported.__doc__ = f"Not in kt: {why}"
    return Unsupported


OBSERVERS = (
    "kt measures kernel time only (CUDA events in its worker process) and reports no power, energy, clock or "
    "hardware-counter observations; tune without `observers` and leave metrics that read them out"
)
