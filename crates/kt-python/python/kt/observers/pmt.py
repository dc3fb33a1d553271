"""``kt.observers.pmt``: Kernel Tuner's ``PMTObserver`` is not in kt (see ``kt.observers``)."""

from .._unsupported import OBSERVERS, unsupported

PMTObserver = unsupported("kernel_tuner.observers.pmt.PMTObserver", OBSERVERS)
