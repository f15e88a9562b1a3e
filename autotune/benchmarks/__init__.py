"""Benchmarks that time a collective under mpirun, and the parsers that read their output."""
