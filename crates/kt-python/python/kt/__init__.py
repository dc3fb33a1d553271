"""kt from Python: ``kt.tune_kernel`` takes Kernel Tuner's ``tune_kernel`` arguments and tunes with kt's tuner
(every configuration verified against ``answer`` on poisoned outputs, CUDA-event timing, an isolated worker
process). A Kernel Tuner script switches with one line::

    import kt as kernel_tuner
    results, env = kernel_tuner.tune_kernel("vector_add", source, n, args, tune_params)

Arguments kt does not support raise a TypeError that names them; none is silently ignored.
"""

from ._tune_kernel import tune_kernel
from ._kt import __version__

__all__ = ["tune_kernel", "__version__"]
