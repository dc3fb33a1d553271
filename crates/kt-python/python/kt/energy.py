"""``kt.energy``: Kernel Tuner's power-frequency model (``kernel_tuner.energy``, which sets GPU clocks through
NVML and fits power measurements) is not in kt; ``energy`` is here so that a script fails where it uses it,
saying why."""


class _NotInKt:
    def __getattr__(self, name):
        raise NotImplementedError(
            f"kt has no kernel_tuner.energy.energy.{name}: kt measures kernel time only; it neither sets GPU "
            "clocks nor reads power"
        )


energy = _NotInKt()
