"""Kernel Tuner's arguments as the plain data kt's compiled module reads: arrays (and ``cmem_args``) saved as
``.npy`` files, scalars with their bytes, parameter values as JSON values, restrictions split into expressions (which kt
evaluates) and Python functions (which kt calls with a dict of the configuration's values)."""

import inspect
import os

import numpy as np


def is_array(value):
    """A numpy array, or a device array kt copies to the host (cupy: ``__cuda_array_interface__`` and
    ``get()``)."""
    return isinstance(value, np.ndarray) or (
        hasattr(value, "__cuda_array_interface__") and callable(getattr(value, "get", None))
    )


def host_array(value):
    """``value`` as a numpy array: a device array copied to the host, anything else through numpy."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__cuda_array_interface__") and callable(getattr(value, "get", None)):
        return value.get()
    return np.asarray(value)


def array_arg(index, array, expected, folder):
    """An array argument, saved in C order; ``expected`` (the answer) is saved in the array's dtype."""
    path = os.path.join(folder, f"arg{index}.npy")
    np.save(path, np.ascontiguousarray(array))
    arg = {"kind": "array", "dtype": array.dtype.name, "path": path}
    if expected is not None:
        expected = np.asarray(expected)
        if expected.size != array.size:
            raise ValueError(
                f"kt.tune_kernel: answer {index} has {expected.size} elements, argument {index} has {array.size}"
            )
        answer_path = os.path.join(folder, f"answer{index}.npy")
        np.save(answer_path, np.ascontiguousarray(expected.astype(array.dtype, copy=False)))
        arg["answer"] = answer_path
    return arg


def constant_args(cmem_args, folder):
    """Kernel Tuner's ``cmem_args``: ``__constant__`` symbol name to numpy array (or numpy scalar), each saved as
    a ``.npy`` file in C order; kt writes its bytes into the symbol."""
    if cmem_args is None:
        return []
    if not isinstance(cmem_args, dict):
        raise TypeError("kt.tune_kernel: cmem_args must be a dict of __constant__ symbol name to numpy array")
    out = []
    for i, (name, value) in enumerate(cmem_args.items()):
        if not isinstance(name, str):
            raise TypeError(f"kt.tune_kernel: cmem_args key {name!r} must be the symbol's name as a string")
        if isinstance(value, np.generic):
            value = np.asarray(value).reshape(1)
        if not isinstance(value, np.ndarray):
            raise TypeError(
                f"kt.tune_kernel: cmem_args[{name!r}] is a {type(value).__name__}; give a numpy array (or numpy scalar)"
            )
        path = os.path.join(folder, f"cmem{i}.npy")
        np.save(path, np.ascontiguousarray(value))
        out.append({"name": name, "dtype": value.dtype.name, "path": path})
    return out


def scalar_arg(index, value):
    """A numpy scalar argument: its value and its bytes as the kernel receives them."""
    return {
        "kind": "scalar",
        "dtype": value.dtype.name,
        "value": float(value),
        "bytes": list(value.tobytes()),
    }


def param_value(name, value):
    """One tunable value as JSON: int, float, bool or str (numpy scalars converted)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    raise TypeError(
        f"kt.tune_kernel: tune_params[{name!r}] holds {value!r}, a {type(value).__name__}; values must be ints, floats, booleans or strings"
    )


def tune_params_list(tune_params):
    """The parameters in the caller's order, each with its values."""
    out = []
    for name, values in tune_params.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"kt.tune_kernel: tune_params[{name!r}] must be a list of values")
        out.append([name, [param_value(name, v) for v in values]])
    return out


def _as_dict_function(f, names):
    """Kernel Tuner calls a restriction with the configuration's dict, or (newer versions) with the
    parameters it names as arguments; either way kt calls the returned function with the dict."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return f
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= 1 and all(p.name in names for p in positional):
        wanted = [p.name for p in positional]
        return lambda config: f(*(config[n] for n in wanted))
    return f


def restriction_parts(restrictions, tune_params):
    """(expressions, functions) from Kernel Tuner's ``restrictions``: a string, a function, or a list of them."""
    if restrictions is None:
        return [], []
    items = restrictions if isinstance(restrictions, (list, tuple)) else [restrictions]
    names = set(tune_params)
    strings, functions = [], []
    for r in items:
        if isinstance(r, str):
            strings.append(r)
        elif callable(r):
            functions.append(_as_dict_function(r, names))
        else:
            raise TypeError(
                f"kt.tune_kernel: restriction {r!r} is a {type(r).__name__}; give strings or functions"
            )
    return strings, functions
