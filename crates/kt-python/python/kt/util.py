"""The pieces of Kernel Tuner's ``kernel_tuner.util`` its example scripts use on results: picking the best
configuration and printing one compactly. (The rest of that module is Kernel Tuner's internals.)"""

import json
import sys

import numpy as np


def _failed(result):
    return "__error__" in result


def get_best_config(results, objective="time", objective_higher_is_better=False):
    """The result with the lowest ``objective`` (highest with ``objective_higher_is_better``); configurations
    that failed, or whose objective is not a number, count as the worst."""
    worst = -sys.float_info.max if objective_higher_is_better else sys.float_info.max

    def value(result):
        v = result.get(objective)
        if _failed(result) or isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
            return worst
        return float(v)

    pick = max if objective_higher_is_better else min
    return pick(results, key=value)


def get_config_string(params, keys=None, units=None):
    """``name=value`` pairs of ``params`` joined by ", " (only ``keys`` when given); floats with three
    decimals, a unit from ``units`` after a value when it names one."""
    wanted = set(params) if not keys else set(keys)
    items = []
    for name, value in params.items():
        if name not in wanted:
            continue
        text = f"{round(value, 3):.3f}" if isinstance(value, float) else str(value)
        unit = units.get(name, "") if isinstance(units, dict) else ""
        items.append(f"{name}={text}{unit}")
    return ", ".join(items)


class NpEncoder(json.JSONEncoder):
    """``json.dump(..., cls=NpEncoder)`` for results that hold numpy numbers or arrays."""

    def default(self, o):
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
        return super().default(o)
