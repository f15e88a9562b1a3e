"""autotune.analysis: curves, Hockney fits, cliffs, IMB files as curves."""
