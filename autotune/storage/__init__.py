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
                      RESOLUTION_ATTR, RESULT_CHECK, RULES_ATTR, RUN_ATTR, STUDY_KEYS,
                      VERIFICATION_ATTR, StoredSettings, TrialKey, TrialRecord, failure_attrs,
                      record_checksum, requeue_attrs, run_attrs, trial_attrs)
from ._save import save_trial, skip_trial
from ._rules import Comparison, RuleVariant, StoredRules, save_rules, stored_rules
from ._study import (ConfirmedCandidate, StoredConfirmation, StoredRun, StoredVerification,
                     VerifiedSize, stored_confirmation, stored_run, stored_verification)
from ._trials import (HISTORY_COLUMNS, NBC_SIZE_COLUMNS, SIZE_COLUMNS, StudyConfig, history_frame,
                      stored_config, trial_records, trials_by_number, trials_done)
from ._grid import Config, Grid, config_key, grid_rows, named_benchmark, read_grid
from ._write import write_planned_params, write_user_attrs

__all__ = ["BASELINE_PREFIX", "CONFIG_ATTR", "CONFIRMATION_ATTR", "FINGERPRINT_ATTR",
           "HISTORY_COLUMNS", "NBC_SIZE_COLUMNS", "NEVER_AGAIN", "RESOLUTION_ATTR", "RESULT_CHECK",
           "RULES_ATTR", "RUN_ATTR", "SIZE_COLUMNS", "STUDY_KEYS", "VERIFICATION_ATTR",
           "BaselineLaunch", "Comparison", "Config", "ConfirmedCandidate", "Grid", "PatientStorage",
           "RuleVariant", "StoredConfirmation", "StoredRules", "StoredRun", "StoredSettings",
           "StoredVerification", "StudyConfig", "TrialKey", "TrialRecord", "VerifiedSize",
           "autotune_home", "baseline_key", "choose_name", "config_key", "default_storage_url",
           "enqueue_default", "failure_attrs", "grid_rows", "history_frame",
           "known_invalid_params", "load_baselines", "load_existing_study", "named_benchmark",
           "open_storage", "params_key", "quiet_optuna", "read_grid", "record_checksum",
           "recover_abandoned", "redact", "requeue_attrs", "run_attrs", "save_baseline",
           "save_rules", "save_trial", "skip_trial", "stored_config", "stored_confirmation",
           "stored_rules", "stored_run", "stored_verification", "study_names", "trial_attrs",
           "trial_records", "trials_by_number", "trials_done", "write_planned_params",
           "write_user_attrs"]
