"""A storage that is not whole is named as corrupt (what could not be read), a file that is not a
database is refused and left as it was; never a traceback, never values shown as if whole."""
import math
import sqlite3

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
