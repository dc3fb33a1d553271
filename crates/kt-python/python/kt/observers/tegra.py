"""``kt.observers.tegra``: Kernel Tuner's ``TegraObserver`` is not in kt (see ``kt.observers``)."""

from .._unsupported import OBSERVERS, unsupported

TegraObserver = unsupported("kernel_tuner.observers.tegra.TegraObserver", OBSERVERS)
