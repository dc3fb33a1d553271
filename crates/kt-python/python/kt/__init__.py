"""kt from Python.

``kt.tune_kernel`` takes Kernel Tuner's ``tune_kernel`` arguments and tunes with kt's tuner (every
configuration verified against ``answer`` on poisoned outputs, CUDA-event timing, an isolated worker
process). A Kernel Tuner script switches with one line::

    import kt as kernel_tuner
    results, env = kernel_tuner.tune_kernel("vector_add", source, n, args, tune_params)

Arguments kt does not support raise a TypeError that names them; none is silently ignored. Beside it, what
Kernel Tuner's example scripts use: ``kt.run_kernel`` (one configuration run once, its arrays handed back),
``kt.kernelbuilder.PythonKernel``, ``kt.util.get_best_config`` and ``get_config_string``,
``kt.file_utils.store_output_file`` and ``store_metadata_file`` (Kernel Tuner's T4 JSON formats) and
``kt.strategies``; Kernel Tuner's observers and accuracy tuning (``kt.observers``, ``kt.accuracy``) are not in
kt and say so where a script uses them.

``kt.transform`` is the ``kt transform`` command (a naive kernel to a fast verified one, with an LLM), and
``kt.runs`` reads the runs it records::

    run = kt.transform("matmul.cu", strategy="autonomous", llm="openai:gpt-4.1")
    print(run.speedup, run.correct, run.best_params, run.path)
    kt.runs.list()

A run stopped for want of a GPU (``kt.RunStopped``) continues with ``kt.resume(path)``. Everything kt could not
do raises ``kt.KtError`` (``RunStopped`` is one). The package also installs the ``kt`` command.

Like Kernel Tuner (one CUDA context per process), kt keeps its GPU worker between ``tune_kernel`` and
``run_kernel`` calls, so a second call does not start a worker and a context again; it is shut down at exit.
"""

import atexit

from . import file_utils, kernelbuilder, runs, strategies, util
from ._errors import KtError, RunStopped
from ._kt import __version__, release_tuner
from ._run import Run
from ._run_kernel import run_kernel
from ._transform import resume, transform
from ._tune_kernel import tune_kernel

atexit.register(release_tuner)

__all__ = [
    "tune_kernel",
    "run_kernel",
    "transform",
    "resume",
    "runs",
    "util",
    "file_utils",
    "kernelbuilder",
    "strategies",
    "Run",
    "KtError",
    "RunStopped",
    "__version__",
]
