def test_spaces_list_and_show(autotune_cli):
    listed = autotune_cli("spaces", "list", check=True).stdout
    for name in ("openmpi-ucx", "openmpi-tuned", "openmpi-han", "mpich", "cray-mpich"):
        assert name in listed
    shown = autotune_cli("spaces", "show", "openmpi-ucx", check=True).stdout
    for knob in ("UCX_TLS", "UCX_RNDV_THRESH", "UCX_ZCOPY_THRESH", "coll_hcoll_enable",
                 "coll_ucc_enable", "mapping", "NPS", "manual staged sweep"):
        assert knob in shown
    tuned = autotune_cli("spaces", "show", "openmpi-tuned", check=True).stdout
    assert "from ompi_info" in tuned and "coll_tuned_reduce_algorithm_chain_fanout" in tuned


def test_spaces_validate_reports_what_this_machine_removes(autotune_cli, tmp_path):
    out = autotune_cli("spaces", "validate", "openmpi-ucx", check=True).stdout
    assert "valid" in out and "coll_hcoll_enable" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\nparameters:\n  - {name: LD_PRELOAD, apply: env, choices: [a, b], default: a}\n")
    proc = autotune_cli("spaces", "validate", str(bad))
    assert proc.returncode == 2 and "may not be set" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_malicious_cli_values_are_refused_before_any_launch(autotune_cli):
    for args, text in [
        (["--sizes", "8;rm -rf /"], "invalid size"),
        (["--sizes", "8\n16"], "invalid size"),
        (["--space", "openmpi-ucx;id"], "unknown search space"),
        (["--space", "-x"], "unknown search space"),
        (["--weights", "\x01"], "cannot read weights file"),
        (["--study", "s\ntouch x"], "invalid study name"),
        (["--warm-start", "../../etc/passwd"], "not found"),
    ]:
        proc = autotune_cli("start", "--collective", "allreduce", "--foreground", *args)
        assert proc.returncode != 0, args
        assert text in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_libnbc_space_is_listed_shown_and_validated_for_the_nonblocking_collectives(autotune_cli):
    listed = autotune_cli("spaces", "list", check=True).stdout
    assert "openmpi-libnbc" in listed
    shown = autotune_cli("spaces", "show", "openmpi-libnbc", check=True).stdout
    assert "coll_libnbc_iallreduce_algorithm" in shown and "iallreduce" in shown
    # validate resolves it for each collective a knob applies to (the non-blocking ones here)
    out = autotune_cli("spaces", "validate", "openmpi-libnbc", check=True).stdout
    assert "iallreduce on 1 node here" in out and "ibcast on 1 node here" in out
