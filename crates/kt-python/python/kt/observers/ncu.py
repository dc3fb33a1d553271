"""``kt.observers.ncu``: Kernel Tuner's ``NCUObserver`` is not in kt (see ``kt.observers``)."""

from .._unsupported import OBSERVERS, unsupported

NCUObserver = unsupported("kernel_tuner.observers.ncu.NCUObserver", OBSERVERS)
