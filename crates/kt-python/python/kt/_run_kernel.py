"""``kt.run_kernel``: Kernel Tuner's ``run_kernel`` (the kernel compiled at one configuration, run once, every
argument handed back as it is after the launch) on kt's worker."""

import tempfile

import numpy as np

from ._arguments import is_array
from ._errors import KtError
from ._record import record
from ._tune_kernel import check_refused, request_for, source_and_generator

_REFUSED = {
    "smem_args": None,
    "texmem_args": None,
    "compiler": None,
    "defines": None,
    "log": None,
    "platform": 0,
    "device": 0,
}


def _write_back(device_array, contents):
    """A device (cupy) argument gets the launch's result in place, as the kernel wrote into it under Kernel
    Tuner."""
    device_array.set(np.ascontiguousarray(contents).reshape(device_array.shape))


def run_kernel(
    kernel_name,
    kernel_source,
    problem_size,
    arguments,
    params,
    grid_div_x=None,
    grid_div_y=None,
    grid_div_z=None,
    lang=None,
    device=0,
    platform=0,
    smem_args=None,
    cmem_args=None,
    texmem_args=None,
    compiler=None,
    compiler_options=None,
    defines=None,
    block_size_names=None,
    quiet=False,
    log=None,
):
    """Compiles ``kernel_name`` with ``params`` (one value per parameter, each a ``#define`` as in
    ``tune_kernel``), runs it once on ``arguments`` and returns a list like ``arguments``: each array as it is
    after the launch, scalars as given. Block sizes not in ``params`` take Kernel Tuner's defaults (256, 1, 1).

    The launch runs in kt's worker process on copies: numpy arguments are left as they are; a cupy argument
    gets the launch's result written back into it (the kernel worked on it in place under Kernel Tuner) and is
    returned itself. A kernel that fails to compile or faults raises ``kt.KtError``.
    """
    given = dict(locals())
    check_refused(given, _REFUSED, "run_kernel")
    tune_params = {name: [value] for name, value in dict(params).items()}
    source_text, generator = source_and_generator(kernel_source, tune_params, "run_kernel")
    fields = dict(
        given,
        tune_params=tune_params,
        answer=None,
        atol=1e-6,
        restrictions=None,
        strategy=None,
        strategy_options=None,
        iterations=None,
        cache=None,
        seed=None,
    )
    outputs = [i for i, a in enumerate(arguments) if is_array(a)]
    got = {}

    def on_outputs(_, arrays, error):
        if error is not None:
            raise KtError(f"kt.run_kernel: `{kernel_name}` with {dict(params)} could not run: {error}")
        got.update(arrays)

    with tempfile.TemporaryDirectory(prefix="kt-run-") as folder:
        request, _ = request_for(fields, folder, source_text, "run_kernel")
        record(request, folder, [{k: v[0] for k, v in tune_params.items()}], outputs, generator, on_outputs)
    results = []
    for i, arg in enumerate(arguments):
        if i not in got:
            results.append(arg)
            continue
        contents = got[i].reshape(np.shape(arg))
        if isinstance(arg, np.ndarray):
            results.append(contents.astype(arg.dtype, copy=False))
        else:
            _write_back(arg, contents.astype(arg.dtype, copy=False))
            results.append(arg)
    return results
