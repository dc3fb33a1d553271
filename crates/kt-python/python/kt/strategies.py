"""``kt.strategies``: kt's search strategies by the names ``tune_kernel(strategy=...)`` takes, for scripts that
write ``kernel_tuner.strategies.NAME``. Each attribute is the name itself (kt's strategies run inside kt's
compiled tuner, not as Python modules); a Kernel Tuner strategy kt does not have raises AttributeError
saying which ones it has."""

STRATEGIES = ("brute_force", "random_sample", "greedy_ils", "simulated_annealing", "genetic_algorithm")

brute_force = "brute_force"
random_sample = "random_sample"
greedy_ils = "greedy_ils"
simulated_annealing = "simulated_annealing"
genetic_algorithm = "genetic_algorithm"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"kt has no strategy `{name}`: kt's strategies run inside its compiled tuner, not as Python modules, "
        f"and are {', '.join(STRATEGIES)} (tune_kernel(strategy='greedy_ils'))"
    )
