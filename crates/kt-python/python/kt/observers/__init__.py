"""``kt.observers``: Kernel Tuner's observers (NVML power and clocks, Nsight Compute counters, PMT, Tegra) are
not in kt; their classes are here so that a script fails where it makes one, saying why."""

from .._unsupported import OBSERVERS, unsupported

BenchmarkObserver = unsupported("kernel_tuner.observers.BenchmarkObserver", OBSERVERS)
