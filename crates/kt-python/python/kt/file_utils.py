"""``kt.file_utils``: tuning results and the machine they were measured on as JSON files in the T4 formats
(the open autotuning results and metadata schemas, version 1.0.0) that Kernel Tuner's
``kernel_tuner.file_utils`` writes, so tools that read those files read kt's.

What kt adds to its results (the ``kt_*`` keys) stays out of the T4 file: its measurements are numbers,
strings or lists, and kt's extras are not all of those. A configuration kt found computing a wrong answer is
written with ``invalidity`` "correctness" and ``correctness`` 0 (Kernel Tuner stops at one instead).
"""

import datetime
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from .util import NpEncoder

SCHEMA_VERSION = "1.0.0"

# what a result's `__error__` says, as T4's `invalidity`
_INVALIDITY = {
    "CompilationFailedConfig": "compile",
    "RuntimeFailedConfig": "runtime",
    "InvalidConfig": "constraints",
}
_TIMINGS = {
    "compile_time": "compilation",
    "benchmark_time": "benchmark",
    "framework_time": "framework",
    "strategy_time": "search_algorithm",
    "verification_time": "validation",
}


def _json_name(filename):
    name = os.fspath(filename)
    return name if name.endswith(".json") else name + ".json"


def _write(filename, document, **dump_options):
    path = _json_name(filename)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, cls=NpEncoder, **dump_options)


def _invalidity(result):
    if "__error__" not in result:
        return "correct"
    if str(result.get("kt_verdict", "")).startswith("wrong answer"):
        return "correctness"
    return _INVALIDITY.get(str(result["__error__"]), "runtime")


def get_t4_results(results, tune_params, objective="time"):
    """``results`` (as ``tune_kernel`` returns them) as a T4 results document."""
    if not isinstance(objective, str):
        raise ValueError("the T4 format has one objective: give its name, e.g. 'time'")
    not_measured = set(tune_params) | set(_TIMINGS) | {"timestamp", "times"}
    entries = []
    for result in results:
        entry = {}
        if "timestamp" in result:
            entry["timestamp"] = result["timestamp"]
        entry["configuration"] = {k: result[k] for k in tune_params if k in result}
        times = {t4: result.get(key, 0) for key, t4 in _TIMINGS.items()}
        times["runtimes"] = list(result.get("times", []))
        entry["times"] = times
        entry["invalidity"] = _invalidity(result)
        entry["correctness"] = 0 if entry["invalidity"] == "correctness" else 1
        entry["measurements"] = [
            {"name": key, "value": value, "unit": "ms" if key.startswith("time") else ""}
            for key, value in result.items()
            if key not in not_measured and not key.startswith("kt_")
        ]
        entry["objectives"] = [objective]
        entries.append(entry)
    return {"results": entries, "schema_version": SCHEMA_VERSION, "metadata": {"timeunit": "milliseconds"}}


def store_output_file(output_filename, results, tune_params, objective="time"):
    """Writes ``results`` to ``output_filename`` (".json" added when missing, folders made) as a T4 results
    file."""
    _write(output_filename, get_t4_results(results, tune_params, objective))


def _xml_value(element):
    """An XML element as plain data, the way nvidia-smi's XML is usually turned into JSON: attributes as
    ``@name``, children by tag (a list when a tag repeats), the text alone when there is nothing else."""
    children = list(element)
    text = (element.text or "").strip()
    if not children and not element.attrib:
        return text or None
    value = {f"@{k}": v for k, v in element.attrib.items()}
    for child in children:
        item = _xml_value(child)
        if child.tag in value:
            if not isinstance(value[child.tag], list):
                value[child.tag] = [value[child.tag]]
            value[child.tag].append(item)
        else:
            value[child.tag] = item
    if text:
        value["#text"] = text
    return value


def _nvidia_smi():
    """``nvidia-smi --query -x`` as plain data, without the processes on each GPU; None without it."""
    try:
        out = subprocess.run(["nvidia-smi", "--query", "-x"], capture_output=True, check=True, timeout=60)
        root = ET.fromstring(out.stdout)
    except (OSError, subprocess.SubprocessError, ET.ParseError):
        return None
    doc = {root.tag: _xml_value(root)}
    gpus = doc[root.tag].get("gpu") if isinstance(doc[root.tag], dict) else None
    for gpu in gpus if isinstance(gpus, list) else [gpus]:
        if isinstance(gpu, dict):
            gpu.pop("processes", None)
    return doc


def _hardware():
    """(operating system, hardware description list): ``lshw -json`` on Linux."""
    names = {"linux": "Linux", "darwin": "Mac", "win32": "Windows"}
    system = names.get(sys.platform, "unidentified OS")
    try:
        out = subprocess.run(["lshw", "-json"], capture_output=True, check=True, timeout=120)
        described = json.loads(out.stdout.decode("utf-8", "replace"))
    except (OSError, subprocess.SubprocessError, ValueError):
        described = ["error retrieving hardware description"]
    return system, described if isinstance(described, list) else [described]


def _requirements():
    """kt and what it depends on, as ``name==version`` for what is installed."""
    names = ["kt"]
    try:
        requires = importlib.metadata.requires("kt") or []
    except importlib.metadata.PackageNotFoundError:
        requires = ["numpy"]
    names += [m.group(0) for m in (re.match(r"[A-Za-z0-9_.-]+", r) for r in requires) if m]
    out = []
    for name in names:
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def get_t4_metadata():
    """The machine as a T4 metadata document: the operating system and ``lshw``'s hardware description, what
    ``nvidia-smi`` reports, and the Python packages kt runs with."""
    system, described = _hardware()
    device_query = {}
    smi = _nvidia_smi()
    if smi is not None:
        device_query["nvidia-smi"] = smi
    metadata = {
        "operating_system": system,
        "hardware": {"hardware_description": described},
        "environment": {"device_query": device_query, "requirements": _requirements()},
        "kt": {
            "python": platform.python_version(),
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        },
    }
    return {"metadata": metadata, "schema_version": SCHEMA_VERSION}


def store_metadata_file(metadata_filename):
    """Writes the machine's description to ``metadata_filename`` (".json" added when missing, folders made)
    as a T4 metadata file."""
    _write(metadata_filename, get_t4_metadata(), indent="  ")
