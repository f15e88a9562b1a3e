"""Analysis of latency-vs-size curves: Hockney fits per protocol region, protocol cliffs; the
overlap of a non-blocking collective per size.

Pure functions over `Curve`s (from a study, a report or an IMB output); the only I/O is the IMB
file reader used by `autotune analyze`. scikit-learn is imported when a fit runs, not here.
"""

from ._cliffs import Cliff, find_cliffs
from ._curves import (COLLECTIVE_NAMES, DEFAULT_NOISE, MIN_NOISE, Curve, collective_name,
                      curve_noise, effective_bytes, throughput_mb_s, volume_formula)
from ._hockney import HockneyFit, HockneyRegion, fit_hockney
from ._imb import LATENCIES, ImbCurve, ImbFile, imb_curves, read_imb_file
from ._overlap import OverlapRow, overlap_rows

__all__ = ["COLLECTIVE_NAMES", "DEFAULT_NOISE", "LATENCIES", "MIN_NOISE", "Cliff", "Curve",
           "HockneyFit", "HockneyRegion", "ImbCurve", "ImbFile", "OverlapRow", "collective_name",
           "curve_noise", "overlap_rows",
           "effective_bytes", "find_cliffs", "fit_hockney", "imb_curves", "read_imb_file",
           "throughput_mb_s", "volume_formula"]
