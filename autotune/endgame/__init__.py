"""What runs after the search, in interleaved rounds against the untuned stack, on one engine
(`rounds`: one arm type, one failure policy):

- `confirm`: the best few configurations re-measured until each is decided, a claim only beyond
  doubt;
- `stage`: the per-size stage (every algorithm at every size, then the composed rules measured);
- `verify`: the exported best, as the export deploys it (adopted per-size rules included),
  measured with the partner benchmark (`partner`); `verify_run` is `autotune verify` on its own.
"""
