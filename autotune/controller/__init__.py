"""The study loop (ask -> measure -> score -> tell), its parallel trials, and what one trial's
measurement holds. The controller knows neither the launcher nor the benchmark."""

from ._loop import Controller

__all__ = ["Controller"]
