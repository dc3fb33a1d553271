"""kt's command line run by this interpreter: what kt starts when it starts itself again from Python (the GPU
worker, the program Nsight Compute watches), since a Python process has no ``kt`` binary. Not for people:
``kt_command()`` in ``_worker.py`` builds the command line that reaches ``main``."""

import sys

from . import _kt
from ._worker import kt_command


def main():
    # `python -c CODE ARGS…`: sys.argv is ["-c", ARGS…]
    sys.exit(_kt.main(sys.argv[1:], kt_command()))
