"""``kt.kernelbuilder.PythonKernel``: a kernel at one configuration called like a Python function, as Kernel
Tuner's ``kernel_tuner.kernelbuilder.PythonKernel``. Every call is a ``kt.run_kernel`` (kt's worker is started
for it, about a second): for tests and small scripts, not for a loop that calls the kernel many times."""

import numpy as np

from ._arguments import is_array
from ._run_kernel import run_kernel


class PythonKernel:
    """The kernel ``kernel_name`` compiled with ``params``, called as ``kernel(*arguments)``.

    ``arguments`` are the arguments it is built for (their contents are where the device state starts);
    ``inputs[i]`` says whether a call's argument ``i`` replaces that state (default: all), ``outputs[i]``
    whether a call returns array ``i`` (default: all). A call returns the list of the numpy arrays marked as
    outputs, as they are after the launch; a cupy argument gets its result written back into it instead.
    Arguments not marked as inputs keep what the previous launch left in them, as on the device under
    Kernel Tuner.
    """

    def __init__(
        self,
        kernel_name,
        kernel_string,
        problem_size,
        arguments,
        params=None,
        inputs=None,
        outputs=None,
        device=0,
        platform=0,
        block_size_names=None,
        grid_div_x=None,
        grid_div_y=None,
        grid_div_z=None,
        verbose=True,
        lang=None,
        results_file=None,
    ):
        if results_file is not None:
            raise TypeError(
                "kt.kernelbuilder.PythonKernel: argument `results_file` is not supported (kt reads no Kernel "
                "Tuner results file to pick the parameters); give `params`"
            )
        self.kernel_name = kernel_name
        self.kernel_string = kernel_string
        self.problem_size = problem_size
        self.params = dict(params or {})
        self.inputs = list(inputs) if inputs else [True] * len(arguments)
        self.outputs = list(outputs) if outputs else [True] * len(arguments)
        self.options = dict(
            device=device,
            platform=platform,
            block_size_names=block_size_names,
            grid_div_x=grid_div_x,
            grid_div_y=grid_div_y,
            grid_div_z=grid_div_z,
            lang=lang,
        )
        # the device state between calls: what each argument holds on the device
        self.state = list(arguments)

    def run_kernel(self, args):
        """Runs the kernel on ``args`` (see the class) and returns the outputs."""
        if len(args) != len(self.state):
            raise TypeError(
                f"kt PythonKernel {self.kernel_name}: called with {len(args)} arguments, built for {len(self.state)}"
            )
        current = [arg if self.inputs[i] else self.state[i] for i, arg in enumerate(args)]
        after = run_kernel(
            self.kernel_name, self.kernel_string, self.problem_size, current, self.params, **self.options
        )
        self.state = [a if is_array(a) else current[i] for i, a in enumerate(after)]
        return [
            after[i]
            for i, arg in enumerate(args)
            if self.outputs[i] and isinstance(arg, np.ndarray)
        ]

    def __call__(self, *args):
        return self.run_kernel(args)
