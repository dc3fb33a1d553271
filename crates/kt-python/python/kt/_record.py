"""The kernel run at given configurations with its arrays handed back (the compiled module's ``record``):
what ``kt.run_kernel``, ``kt.kernelbuilder.PythonKernel`` and ``tune_kernel``'s ``verify`` functions read."""

import json
import os
import shutil

import numpy as np

from . import _kt
from ._worker import tuner_cache_dir, worker_command, worker_env


def record(request, folder, configs, outputs, generator, on_outputs):
    """Runs ``request``'s kernel once at each of ``configs`` (dicts in parameter order) and calls
    ``on_outputs(i, arrays, error)``: ``arrays`` maps each argument index of ``outputs`` to its contents after
    the launch (None with ``error``, a message, when the configuration could not run). The .npy files are
    read and removed before the next configuration runs."""
    out_dir = os.path.join(folder, "outputs")

    def received(i, files, error):
        arrays = None
        if files is not None:
            arrays = {index: np.load(path) for index, path in files}
            shutil.rmtree(os.path.join(out_dir, str(i)), ignore_errors=True)
        on_outputs(i, arrays, error)

    _kt.record(
        json.dumps(request),
        worker_command(),
        worker_env(),
        json.dumps([[[k, v] for k, v in c.items()] for c in configs]),
        list(outputs),
        out_dir,
        received,
        tuner_cache_dir(),
        generator,
    )
