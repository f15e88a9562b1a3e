"""Per-size algorithm rules (RuleSet) and how they are chosen from a study's measurements
(the stage itself is `autotune.rules.stage`, imported where it runs: it needs storage)."""

from ._model import (TUNED_PREFIX, AlgorithmChoice, RuleSet, SizeBand, choice_from_params,
                     ompi_message_size, tuned_param_names)

__all__ = ["TUNED_PREFIX", "AlgorithmChoice", "RuleSet", "SizeBand", "choice_from_params",
           "ompi_message_size", "tuned_param_names"]
