"""Per-size algorithm rules (RuleSet) and how they are chosen from a study's measurements."""

from ._model import (TUNED_PREFIX, AlgorithmChoice, RuleSet, SizeBand, choice_from_params,
                     tuned_param_names)

__all__ = ["TUNED_PREFIX", "AlgorithmChoice", "RuleSet", "SizeBand", "choice_from_params",
           "tuned_param_names"]
