"""Bad campaign input: one line and a non-zero exit, before anything runs in the background."""

import pytest


@pytest.mark.parametrize("args, said", [
    ((), "missing --collectives, --nodes, --ppn"),
    (("--collectives", "allreduce,scan", "--nodes", "1", "--ppn", "1"), "'scan': choose from"),
    (("--collectives", "allreduce", "--nodes", "0,1", "--ppn", "1"), "expected positive integers"),
    (("--collectives", "allreduce", "--nodes", "1", "--ppn", "two"), "expected positive integers"),
    (("--collectives", "allreduce", "--nodes", "1", "--ppn", "1", "--name", ""), "--name ''"),
    (("--collectives", "allreduce", "--nodes", "1", "--ppn", "1", "--name", "a/b"), "--name 'a/b'"),
    (("--collectives", "allreduce", "--nodes", "1", "--ppn", "64"), "exceeds the"),
    (("--collectives", "allreduce", "--nodes", "1", "--ppn", "1", "--objective", "overlap"),
     "objective"),
])
def test_bad_campaign_input_is_one_line(autotune_cli, args, said):
    proc = autotune_cli("campaign", *args)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("autotune: error:") and said in lines[0], lines


def test_status_without_a_campaign_is_one_line(autotune_cli):
    proc = autotune_cli("campaign", "status")  # no storage at all yet
    assert proc.returncode != 0 and proc.stderr.startswith("autotune: error: no autotune storage")
    autotune_cli("start", "--collective", "allreduce", "--ppn", "1", "--trials", "1",
                 "--sizes", "8", "--repetitions", "3", "--stages", "1", "--confirm", "0",
                 "--no-check-live", "--no-verify", "--foreground", check=True)
    proc = autotune_cli("campaign", "status")  # a storage with a study, but no campaign
    assert proc.returncode != 0 and "autotune: error: no campaign in" in proc.stderr
