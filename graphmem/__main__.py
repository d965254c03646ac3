"""``python -m graphmem`` and the ``graphmem`` console script: :func:`run`."""

import gc
import sys


def run() -> None:
    """Run the command line on ``sys.argv`` and exit with its code.

    The cyclic collector is off from here to the end, before the command line's imports: the
    process ends with the command, every object the imports and the analysis make lives until
    then, and collections over them (and Python's last one at exit) cost about a tenth of a
    small model's run (``scripts/bench_peak.py --startup``)."""
    gc.disable()
    from graphmem.cli import main

    sys.exit(main())


if __name__ == "__main__":
    run()
