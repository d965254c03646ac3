"""Memory as a function of one dim: sweeps with a fitted model, the exact largest value that fits
a budget (:mod:`graphmem.batch.search`), and their rendering (:mod:`graphmem.batch.report`)."""

from graphmem.batch.search import *  # noqa: F403  (the library API: graphmem.batch.sweep, …)
from graphmem.batch.search import __all__  # noqa: F401
