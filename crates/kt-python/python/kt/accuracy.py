"""``kt.accuracy``: Kernel Tuner's accuracy tuning (``TunablePrecision`` arguments whose precision is a tunable
parameter, ``AccuracyObserver`` error metrics) is not in kt; the classes are here so that a script fails
where it makes one, saying why."""

from ._unsupported import unsupported

_WHY = (
    "kt passes each argument with one dtype for every configuration and checks outputs against `answer` "
    "within `atol`; it does not tune an argument's precision or report error metrics"
)

TunablePrecision = unsupported("kernel_tuner.accuracy.TunablePrecision", _WHY)
AccuracyObserver = unsupported("kernel_tuner.accuracy.AccuracyObserver", _WHY)
