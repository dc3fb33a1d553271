"""``kt.observers.nvml``: Kernel Tuner's ``NVMLObserver`` is not in kt (see ``kt.observers``)."""

from .._unsupported import OBSERVERS, unsupported

NVMLObserver = unsupported("kernel_tuner.observers.nvml.NVMLObserver", OBSERVERS)


def get_nvml_gr_clocks(*args, **kwargs):
    """Not in kt: Kernel Tuner reads the GPU's supported clocks through NVML here."""
    raise NotImplementedError("kt has no kernel_tuner.observers.nvml.get_nvml_gr_clocks: " + OBSERVERS)
