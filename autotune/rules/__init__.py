"""Per-size algorithm rules (RuleSet) and how they are chosen from measurements of every
algorithm at every size (the stage that measures them is `autotune.endgame.stage`)."""

from ._model import (TIMES_COMM_SIZE, TUNED_PREFIX, AlgorithmChoice, RuleSet, SizeBand,
                     choice_from_params, ompi_message_size, tuned_param_names)
from ._select import per_size_choice, plan_bands, rule_set

__all__ = ["AlgorithmChoice", "RuleSet", "SizeBand", "TIMES_COMM_SIZE", "TUNED_PREFIX",
           "choice_from_params", "ompi_message_size", "per_size_choice", "plan_bands",
           "rule_set", "tuned_param_names"]
