"""A storage that is not whole is named as corrupt (what could not be read), a file that is not a
database is refused and left as it was; never a traceback, never values shown as if whole."""
import math
import sqlite3

import pytest

from tests.storage import add_trial, controller_attrs, new_study


def finished_study(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0, env={}), value=0.0)
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.2), value=-math.log(1.2))
    return tmp_path / "t.db"


def status(autotune_cli, db):
    return autotune_cli("status", "--storage", f"sqlite:///{db}", timeout=60)


def test_an_unreadable_stored_value_is_named_corrupt(autotune_cli, tmp_path):
    db = finished_study(tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE trial_user_attributes SET value_json = '{\"broken' WHERE key = 'settings'")
    con.commit()
    con.close()
    proc = status(autotune_cli, db)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and f"storage {db} is corrupt" in line and "could not read" in line


def test_a_damaged_page_is_found_by_quick_check(autotune_cli, tmp_path):
    db = finished_study(tmp_path)
    data = bytearray(db.read_bytes())
    data[2 * 4096] = 0x07  # page 3's b-tree page type: no such type
    db.write_bytes(bytes(data))
    proc = status(autotune_cli, db)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"storage {db} is corrupt" in proc.stderr and proc.stderr.count("\n") == 1


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(autotune_cli, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a database\n")
    for command in (("status",), ("start", "--collective", "allreduce", "--ppn", "2",
                                  "--foreground")):
        proc = autotune_cli(*command, "--storage", f"sqlite:///{notes}", timeout=60)
        assert proc.returncode != 0
        assert f"{notes} is not an SQLite database; refused, not overwritten" in proc.stderr
    assert notes.read_text() == "my notes, not a database\n"


@pytest.mark.mpi
def test_a_flipped_character_in_a_finished_trial_is_named_not_shown(autotune_cli, tmp_path):
    """Issue 13: bit flips that still parse showed wrong values as if whole (an altered argv);
    each finished trial now carries a checksum of its record."""
    db = tmp_path / "real.db"
    autotune_cli("start", "--collective", "allreduce", "--ppn", "2", "--sizes", "8:64",
                 "--repetitions", "3", "--stages", "1", "--time-per-size", "0.002",
                 "--trials", "2", "--space", "openmpi-tuned", "--no-check-live", "--confirm", "0",
                 "--storage", f"sqlite:///{db}", "--foreground", check=True)
    assert autotune_cli("history", "--storage", f"sqlite:///{db}", "--format", "csv",
                        check=True).stdout.count("\n") > 2  # whole: it reads
    con = sqlite3.connect(db)
    trial_id, value, number = con.execute(
        "SELECT a.trial_id, a.value_json, t.number FROM trial_user_attributes a JOIN trials t "
        "ON a.trial_id = t.trial_id WHERE a.key = 'launches' ORDER BY t.number DESC").fetchone()
    con.execute("UPDATE trial_user_attributes SET value_json = ? WHERE trial_id = ? AND "
                "key = 'launches'", (value.replace("mpirun", "mpiruN", 1), trial_id))
    con.commit()
    con.close()
    proc = autotune_cli("history", "--storage", f"sqlite:///{db}", "--format", "csv")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"trial {number} is corrupt" in proc.stderr and proc.stderr.count("\n") == 1
