# kt's generator harness. Runs inside the sandbox, in the run's work directory, as
#     python3 -B kt_harness.py kt_spec.json
# It imports the LLM-written generator (kt_generator.py), calls generate(seed), checks the returned arguments
# against the kernel's signature (kt_spec.json) and the __constant__ symbols' contents against their declarations,
# and only then writes them: out/args/<name>.npy, out/constants/<name>.npy and out/result.json. Every failure is
# reported in out/result.json with a kind kt maps to a typed error and the
# generator's own traceback (sent back to the LLM verbatim).
#
# Trust: this file runs in the same process as untrusted code, so kt re-checks everything it reads back (the
# .npy headers, sizes, dtypes, the total). The checks here exist to give the LLM precise error messages early and
# to refuse to write oversized data at all.
import errno
import json
import math
import os
import sys
import traceback

MAIN_PID = os.getpid()
OUT = "out"
HARNESS_FILE = os.path.abspath(__file__)


def finish(result, code):
    # A process the generator forked must not report (its copy of this harness would race the real one).
    if os.getpid() != MAIN_PID:
        os._exit(0)
    os.makedirs(OUT, exist_ok=True)
    tmp = os.path.join(OUT, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, os.path.join(OUT, "result.json"))
    sys.stdout.flush()
    sys.stderr.flush()
    # _exit: no atexit handlers or finalizers of the generator run after the verdict.
    os._exit(code)


def fail(kind, **fields):
    fields.update({"status": "error", "kind": kind})
    finish(fields, 3)


def generator_traceback(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) != HARNESS_FILE]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


NETWORK_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.ECONNREFUSED, errno.EADDRNOTAVAIL}


def report_exception(exc, during):
    tb = generator_traceback(exc)
    if isinstance(exc, ModuleNotFoundError):
        fail("import_missing", module=exc.name or str(exc), traceback=tb)
    if isinstance(exc, MemoryError):
        fail("limit", which="memory", traceback=tb)
    if isinstance(exc, OSError):
        code = exc.errno
        if code == errno.EAGAIN and ("fork" in tb or "thread" in tb or "spawn" in tb or "Popen" in tb):
            fail("limit", which="processes", traceback=tb)
        if code == errno.EMFILE:
            fail("limit", which="open_files", traceback=tb)
        if code == errno.EFBIG:
            fail("limit", which="file_size", traceback=tb)
        if code == errno.ENOMEM:
            fail("limit", which="memory", traceback=tb)
        if code in NETWORK_ERRNOS or type(exc).__name__ == "gaierror":
            fail("network_denied", traceback=tb)
        if code in (errno.EACCES, errno.EPERM, errno.EROFS):
            fail("permission_denied", path=getattr(exc, "filename", None) or "", traceback=tb)
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        fail("limit", which="processes", traceback=tb)
    if isinstance(exc, SystemExit):
        fail("raised", exception="SystemExit", traceback="the generator called sys.exit(%r) %s" % (exc.code, during))
    fail("raised", exception=type(exc).__name__, traceback=tb)


def evaluate(expr, scalars, what):
    try:
        value = eval(expr, {"__builtins__": {}, "min": min, "max": max, "abs": abs}, dict(scalars))
    except Exception as e:  # the expression comes from kt's spec, the values from the generator
        fail("bad_expression", what=what, expression=expr, error="%s: %s" % (type(e).__name__, e))
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        fail("bad_expression", what=what, expression=expr, error="evaluates to %r, not an integer" % (value,))
    return value


def split_answer(answer):
    """generate()'s dict form: {"args": [...], "constants": {name: array}} (for kernels that read __constant__)."""
    keys = sorted(str(k) for k in answer)
    if "args" not in answer or any(k not in ("args", "constants") for k in keys):
        fail("bad_return", detail='a dict with keys %s; a dict answer has the keys "args" (the arguments in parameter '
             'order) and "constants" (the __constant__ symbols\' contents by name)' % keys)
    constants = answer.get("constants")
    if constants is None:
        constants = {}
    if not isinstance(constants, dict):
        fail("bad_return", detail='"constants" as %s; it must be a dict of symbol name -> numpy array'
             % type(constants).__name__)
    return answer["args"], constants


def check_constants(np, constants_spec, constants):
    """Every __constant__ symbol the kernel reads has a numpy array of its type and length; nothing else is given."""
    reads = [c["name"] for c in constants_spec]
    for name in constants:
        if name not in reads:
            fail("unknown_constant", name=str(name), reads=reads)
    missing = [n for n in reads if n not in constants]
    if missing:
        fail("missing_constants", names=missing)
    checked = []
    for c in constants_spec:
        name, v = c["name"], constants[c["name"]]
        if not isinstance(v, np.ndarray):
            fail("bad_constant", name=name, detail="must be a numpy array of %s (a one-element array for a scalar "
                 "symbol), got %s" % (c["dtype"], type(v).__name__))
        if v.dtype != np.dtype(c["dtype"]):
            fail("bad_constant", name=name, detail="has dtype %s but the symbol is %s" % (v.dtype, c["dtype"]))
        lanes = c["lanes"]
        if v.size == 0:
            fail("bad_constant", name=name, detail="is empty (shape %s)" % (v.shape,))
        if lanes > 1 and (v.ndim < 2 or v.shape[-1] != lanes):
            fail("bad_constant", name=name, detail="must have a last dimension of %d (%s), got shape %s"
                 % (lanes, c["struct"], v.shape))
        count = v.size // lanes
        if c.get("length") is not None and count != c["length"]:
            fail("bad_constant", name=name, detail="must have the %d elements its declaration gives, got %d (shape %s)"
                 % (c["length"], count, v.shape))
        if v.nbytes > c["max_bytes"]:
            fail("bad_constant", name=name, detail="takes %d bytes, more than the %d of constant memory"
                 % (v.nbytes, c["max_bytes"]))
        checked.append((c, v))
    return checked


def save_constant(np, c, v):
    a = np.ascontiguousarray(v)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    os.makedirs(os.path.join(OUT, "constants"), exist_ok=True)
    np.save(os.path.join(OUT, "constants", c["name"] + ".npy"), a, allow_pickle=False)
    entry = {"name": c["name"], "dtype": c["dtype"], "shape": list(a.shape), "file": "constants/%s.npy" % c["name"]}
    if c["lanes"] > 1:
        entry["struct"] = c["struct"]
    return entry


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    params = spec["params"]

    try:
        import numpy as np
    except BaseException as e:
        # numpy is kt's to provide, not the generator's: an interpreter whose numpy is installed but does not
        # import is an environment problem (kt's probe finds numpy without importing it, see python/probe.rs)
        fail("numpy_unusable", error="%s: %s" % (type(e).__name__, e), traceback=generator_traceback(e))

    try:
        import kt_generator
    except BaseException as e:
        report_exception(e, "while importing the generator")
    generate = getattr(kt_generator, "generate", None)
    if not callable(generate):
        fail("no_generate", detail="the generator must define `def generate(seed: int) -> list`")
    try:
        args = generate(spec["seed"])
    except BaseException as e:
        report_exception(e, "inside generate()")

    constants_spec = spec.get("constants") or []
    constants = {}
    if isinstance(args, dict):
        args, constants = split_answer(args)
    if isinstance(args, tuple):
        args = list(args)
    if not isinstance(args, list):
        if constants_spec:
            fail("bad_return", detail='%s, not a list; the kernel reads __constant__ symbols, so return {"args": [<arguments in '
                 'parameter order>], "constants": {<name>: <numpy array>}}' % type(args).__name__)
        fail("bad_return", detail="generate() must return a list of arguments, got %s" % type(args).__name__)
    if len(args) != len(params):
        fail("wrong_arg_count", expected=len(params), got=len(args),
             names=[p["name"] for p in params])

    # Scalars first: array sizes are expressions over them, whatever the parameter order.
    scalars = {}
    entries = [None] * len(params)
    for i, (p, v) in enumerate(zip(params, args)):
        if p["kind"] != "scalar":
            continue
        dtype = np.dtype(p["dtype"])
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v[()]
        if isinstance(v, np.ndarray):
            fail("wrong_kind", param=p["name"], expected="a scalar (%s)" % p["dtype"], got="an array of shape %s" % (v.shape,))
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            fail("wrong_kind", param=p["name"], expected="a scalar (%s)" % p["dtype"], got=type(v).__name__)
        if dtype.kind in "iu":
            if isinstance(v, (float, np.floating)):
                if not float(v).is_integer():
                    fail("wrong_dtype", param=p["name"], expected=p["dtype"], got="%s (%r)" % (type(v).__name__, v))
            value = int(v)
            info = np.iinfo(dtype)
            if value < info.min or value > info.max:
                fail("bad_value", param=p["name"], detail="%d does not fit in %s" % (value, p["dtype"]))
        else:
            value = float(dtype.type(v))
            if not math.isfinite(value):
                fail("bad_value", param=p["name"], detail="%r is not finite" % (v,))
        scalars[p["name"]] = value
        entries[i] = {"name": p["name"], "kind": "scalar", "dtype": p["dtype"], "value": value}

    total = 0
    arrays = []
    for i, (p, v) in enumerate(zip(params, args)):
        if p["kind"] != "array":
            continue
        if not isinstance(v, np.ndarray):
            fail("wrong_kind", param=p["name"], expected="a numpy array of %s" % p["dtype"], got=type(v).__name__)
        if v.dtype != np.dtype(p["dtype"]):
            fail("wrong_dtype", param=p["name"], expected=p["dtype"], got=str(v.dtype))
        lanes = p["lanes"]
        if v.size == 0:
            fail("wrong_size", param=p["name"], expected="a non-empty array", got="shape %s" % (v.shape,))
        if lanes > 1 and (v.ndim < 2 or v.shape[-1] != lanes):
            fail("wrong_size", param=p["name"],
                 expected="an array whose last dimension is %d (%s)" % (lanes, p["struct"]), got="shape %s" % (v.shape,))
        count = v.size // lanes
        if p.get("size"):
            expected = evaluate(p["size"], scalars, "size of " + p["name"])
            if count != expected:
                fail("wrong_size", param=p["name"],
                     expected="%d elements (%s)" % (expected, p["size"]), got="%d elements, shape %s" % (count, v.shape))
        total += v.nbytes
        arrays.append((i, p, v))

    constant_arrays = check_constants(np, constants_spec, constants)

    if total > spec["max_total_bytes"]:
        fail("too_large", bytes=total, limit=spec["max_total_bytes"])

    problem_size = None
    if spec.get("problem_size"):
        problem_size = [evaluate(e, scalars, "problem size") for e in spec["problem_size"]]
        problem_size = (problem_size + [1, 1, 1])[:3]

    try:
        os.makedirs(os.path.join(OUT, "args"), exist_ok=True)
        for i, p, v in arrays:
            a = np.ascontiguousarray(v)
            if a.dtype.byteorder == ">":
                a = a.astype(a.dtype.newbyteorder("<"))
            path = os.path.join(OUT, "args", p["name"] + ".npy")
            np.save(path, a, allow_pickle=False)
            entry = {"name": p["name"], "kind": "array", "dtype": p["dtype"], "shape": list(a.shape),
                     "file": "args/%s.npy" % p["name"]}
            if p["lanes"] > 1:
                entry["struct"] = p["struct"]
            entries[i] = entry
        constant_entries = [save_constant(np, c, v) for c, v in constant_arrays]
    except BaseException as e:
        report_exception(e, "while saving the arguments")

    finish({"status": "ok", "args": entries, "constants": constant_entries, "problem_size": problem_size}, 0)


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # a bug in the harness itself, or an exception escaping the checks
        report_exception(e, "in kt's harness")
