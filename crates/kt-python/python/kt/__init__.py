"""kt from Python.

``kt.tune_kernel`` takes Kernel Tuner's ``tune_kernel`` arguments and tunes with kt's tuner (every
configuration verified against ``answer`` on poisoned outputs, CUDA-event timing, an isolated worker
process). A Kernel Tuner script switches with one line::

    import kt as kernel_tuner
    results, env = kernel_tuner.tune_kernel("vector_add", source, n, args, tune_params)

Arguments kt does not support raise a TypeError that names them; none is silently ignored.

``kt.transform`` is the ``kt transform`` command (a naive kernel to a fast verified one, with an LLM), and
``kt.runs`` reads the runs it records::

    run = kt.transform("matmul.cu", strategy="autonomous", llm="openai:gpt-4.1")
    print(run.speedup, run.correct, run.best_params, run.path)
    kt.runs.list()

A run stopped for want of a GPU (``kt.RunStopped``) continues with ``kt.resume(path)``. Everything kt could not
do raises ``kt.KtError`` (``RunStopped`` is one). The package also installs the ``kt`` command.
"""

from . import runs
from ._errors import KtError, RunStopped
from ._kt import __version__
from ._run import Run
from ._transform import resume, transform
from ._tune_kernel import tune_kernel

__all__ = ["tune_kernel", "transform", "resume", "runs", "Run", "KtError", "RunStopped", "__version__"]
