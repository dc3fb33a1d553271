"""kt's command line run by this interpreter: the package's ``kt`` console command (``[project.scripts]``), and
what kt starts when it starts itself again from Python (the GPU worker, the program Nsight Compute watches),
since a Python process has no ``kt`` binary. ``kt_command()`` in ``_worker.py`` builds the command line that
reaches ``main`` from a running kt."""

import sys

from . import _kt
from ._worker import kt_command


def main():
    # the console command: sys.argv is [kt, ARGS…]; `python -c CODE ARGS…`: sys.argv is ["-c", ARGS…]
    sys.exit(_kt.main(sys.argv[1:], kt_command()))
