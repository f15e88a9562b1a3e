"""Search spaces: the model (_model), safe loading and validation (_load), what a space may set
(_policy), the check against what the installed MPI offers (_resolve), and the configurations one
knob away from another (_neighbours)."""

from ._load import SPACES_DIR, available_spaces, check_args, check_name, load_space, parse_yaml
from ._model import (UNSET, Compose, LaunchSettings, Parameter, Requirement, SearchSpace, Setting,
                     TrialContext, assignments, check_value, is_choice)
from ._neighbours import (changed_knobs, completed, knob_defaults, knobs_changed, one_knob_changes,
                          spread_values, values_of)
from ._resolve import Removal, ResolvedSpace, family_of, resolve

__all__ = ["Compose", "LaunchSettings", "Parameter", "Removal", "Requirement", "ResolvedSpace",
           "SPACES_DIR", "SearchSpace", "Setting", "TrialContext", "UNSET", "assignments", "family_of",
           "available_spaces", "changed_knobs", "check_args", "check_name", "check_value",
           "completed", "is_choice", "knob_defaults", "knobs_changed", "load_space",
           "one_knob_changes", "parse_yaml", "resolve", "spread_values", "values_of"]
