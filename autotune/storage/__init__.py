"""Where studies live and what they hold: one Optuna storage (SQLite by default; any RDB URL or a
journal file) with trial params/values/states kept by Optuna, raw measurements and what ran as
trial user attributes, the study settings and every baseline measurement as study user
attributes. Every stored key is named in `_schema`; readers go through `TrialRecord`.
"""

from ._patient import PatientStorage
from ._history import BaselineLaunch, baseline_key, load_baselines, save_baseline
from ._queue import (NEVER_AGAIN, enqueue_default, known_invalid_params, params_key,
                     recover_abandoned)
from ._open import (autotune_home, choose_name, default_storage_url, load_existing_study,
                    open_storage, quiet_optuna, redact, study_names)
from ._schema import (BASELINE_PREFIX, CONFIG_ATTR, CONFIRMATION_ATTR, FINGERPRINT_ATTR,
                      RESOLUTION_ATTR, RULES_ATTR, RUN_ATTR, STUDY_KEYS, VERIFICATION_ATTR, StoredSettings,
                      TrialKey,
                      TrialRecord, failure_attrs, record_checksum, requeue_attrs, run_attrs,
                      trial_attrs)
from ._rules import Comparison, RuleVariant, StoredRules, save_rules, stored_rules
from ._study import (ConfirmedCandidate, StoredConfirmation, StoredRun, StoredVerification,
                     VerifiedSize, stored_confirmation, stored_run, stored_verification)
from ._trials import (HISTORY_COLUMNS, NBC_SIZE_COLUMNS, SIZE_COLUMNS, StudyConfig, history_frame,
                      stored_config, trial_records)

__all__ = [
    "choose_name",
    "BASELINE_PREFIX", "CONFIG_ATTR", "CONFIRMATION_ATTR", "FINGERPRINT_ATTR", "HISTORY_COLUMNS",
    "RESOLUTION_ATTR", "RUN_ATTR", "SIZE_COLUMNS", "STUDY_KEYS", "BaselineLaunch",
    "ConfirmedCandidate", "StoredConfirmation", "StoredRun", "StoredSettings", "StudyConfig",
    "TrialKey", "TrialRecord", "autotune_home", "baseline_key", "default_storage_url",
    "failure_attrs", "history_frame", "load_baselines", "load_existing_study", "open_storage",
    "quiet_optuna", "redact", "requeue_attrs", "run_attrs", "save_baseline", "stored_config",
    "stored_confirmation", "stored_run", "study_names", "trial_attrs", "trial_records",
    "enqueue_default", "known_invalid_params", "params_key", "recover_abandoned",
    "VERIFICATION_ATTR", "StoredVerification", "VerifiedSize", "stored_verification",
    "NEVER_AGAIN", "PatientStorage", "record_checksum",
    "RULES_ATTR", "Comparison", "RuleVariant", "StoredRules", "save_rules", "stored_rules",
    "NBC_SIZE_COLUMNS",
]
