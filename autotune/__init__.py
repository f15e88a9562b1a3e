"""autotune: find the fastest runtime configuration of an MPI stack for a collective."""

__version__ = "0.1.0"
