"""What runs after the search, in interleaved rounds against the untuned stack: the per-size
stage (`stage`: every algorithm at every size, then the composed rules measured)."""
