"""Every malformed or malicious space gets a clear error naming the file, before anything runs."""
import textwrap

import pytest

from autotune.errors import SpaceError
from autotune.space import available_spaces, load_space

VALID = textwrap.dedent("""\
    name: t
    parameters:
      - {name: UCX_TLS, apply: env, choices: [all, "self,sm"], default: all}
    """)


def test_every_shipped_space_validates():
    names = set(available_spaces())
    assert {"openmpi-ucx", "openmpi-tuned", "openmpi-han", "mpich", "cray-mpich"} <= names
    for name in names:
        space = load_space(name)
        assert space.parameters and space.digest and space.stack != "any"
        assert all(p.source or p.help for p in space.parameters), name


def param(**fields):
    inner = ", ".join(f"{k}: {v}" for k, v in fields.items())
    return f"name: t\nparameters:\n  - {{{inner}}}\n"


BILLION_LAUGHS = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\nname: t\nparameters: []\n"


@pytest.mark.parametrize("body, message", [
    (param(name="LD_PRELOAD", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="PATH", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="UCX_LOG_FILE", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="UCX_STATS_DEST", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="UCX_GDB_COMMAND", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="PYTHONPATH", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="plm_rsh_agent", apply="mca", choices="[a, b]", default="a"), "may not be set"),
    (param(name="mca_param_files", apply="mca", choices="[a, b]", default="a"), "may not be set"),
    (param(name="orte_xterm", apply="mca", choices="[a, b]", default="a"), "may not be set"),
    (param(name="coll_tuned_dynamic_rules_filename", apply="mca", choices="[a, b]", default="a"),
     "may not be set"),
    (param(name="UCX_TLS", apply="env", choices="[all, 'a;reboot']", default="all"), "characters outside"),
    (param(name="UCX_TLS", apply="env", choices="[all, '$(id)']", default="all"), "characters outside"),
    (param(name="UCX_TLS", apply="env", choices="[all, '`id`']", default="all"), "characters outside"),
    (param(name="UCX_TLS", apply="env", choices="[all, 'a b']", default="all"), "characters outside"),
    (param(name="UCX_TLS", apply="env", choices="[all, \"a\\nb\"]", default="all"), "characters outside"),
    (param(name="UCX_TLS", apply="env", choices="[all, '-x']", default="all"), "starts with '-'"),
    (param(name="UCX_TLS", apply="env", choices="[all, \"sm\\n\"]", default="all"), "characters outside"),
    (param(name="\"UCX_TLS\\n\"", apply="env", choices="[a, b]", default="a"), "not a valid environment"),
    (param(name="I_MPI_GTOOL", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="I_MPI_TUNING_BIN", apply="env", choices="[a, b]", default="a"), "may not be set"),
    (param(name="'UCX_TLS;x'", apply="env", choices="[a, b]", default="a"), "not a valid environment"),
    (param(name="\"UCX\\nTLS\"", apply="env", choices="[a, b]", default="a"), "not a valid environment"),
    (param(name="map", apply="mpirun", choices="[a, b]", default="a",
           args="{a: [], b: [--bind-to, none, echo]}"), "is not allowed"),
    (param(name="map", apply="mpirun", choices="[a, b]", default="a",
           args="{a: [], b: [--host, evil]}"), "is not allowed"),
    (param(name="map", apply="mpirun", choices="[a, b]", default="a",
           args="{a: [], b: [--map-by, --x]}"), "unsafe characters"),
    (param(name="map", apply="mpirun", choices="[a, b]", default="a",
           args="{a: [], b: ['--map-by=a;b']}"), "unsafe characters"),
    (param(name="UCX_TLS", apply="env", choices="[all, sm]", default="tcp"), "not one of the choices"),
    (param(name="UCX_X", apply="env", type="int", low=9, high=1, default=5), "inverted range"),
    (param(name="UCX_X", apply="env", type="int", low=1, high=9, default=12), "outside 1..9"),
    ("name: t\nname: u\nparameters: []\n", "duplicate key"),
    ("name: t\nparameters:\n  - !!python/object/apply:os.system ['id']\n", "invalid YAML"),
    ("name: !!python/name:os.system t\nparameters: []\n", "invalid YAML"),
    (BILLION_LAUGHS, "aliases are not allowed"),
    (param(name="UCX_TLS", apply="shell", choices="[a, b]", default="a"), "apply: must be one of"),
    (param(name="UCX_A", apply="env", choices="[a, b]", default="a", when="{UCX_B: [1]}"),
     "not an earlier parameter"),
    (param(name="UCX_A", apply="env", choices="[a, b]"), "default: required"),
    (param(name="UCX_A", apply="env", choices="[a, b]", default="a", scope="somewhere"), "scope:"),
    (param(name="UCX_A", apply="env", choices="[a, b]", default="a",
           requires="{kernel_module: x}"), "unknown requirement"),
    (param(name="UCX_A", apply="env", choices="[a, b]", default="a",
           choice_requires="{c: {ucx_transport: rc}}"), "not one of the choices"),
    (param(name="A", apply="template", choices="[a, b]", default="a"), "no compose entry"),
    (param(name="UCX_A", apply="env", choices="[a, b]", default="a", yields_to="[UCX_B]"),
     "yields_to: 'UCX_B' is not another parameter"),
    (param(name="UCX_A", apply="env", choices="[a, b]", default="a", yields_to="UCX_B"),
     "yields_to: expected a list"),
    (param(name="pml", apply="mca", choices="[unset, ucx]", default="unset",
           choice_implies="{ucx: {plm_rsh_agent: evil}}"), "may not be set"),
    (param(name="pml", apply="mca", choices="[unset, ucx]", default="unset",
           choice_implies="{ucx: {pml_ucx_tls: 'a;b'}}"), "characters outside"),
    (param(name="pml", apply="mca", choices="[unset, ucx]", default="unset",
           choice_implies="{unset: {pml_ucx_tls: any}}"), "not a non-default choice"),
    (param(name="pml", apply="mca", choices="[unset, ucx]", default="unset",
           choice_implies="{ucx: [pml_ucx_tls]}"), "expected a mapping of MCA parameter -> value"),
    (param(name="pml", apply="mca", choices="[ob1, ucx]", default="ob1", unset_means="probe"),
     "unset_means: probe needs a choice 'unset'"),
    (param(name="btl", apply="mca", choices="[unset, tcp]", default="unset", unset_means="probe"),
     "a selector the probe knows"),
    (param(name="pml", apply="mca", choices="[unset, ucx]", default="unset", unset_means="guess"),
     "only probe is supported"),
    (param(name="pml", apply="mca", choices="[unset, ucx]", default="unset",
           choice_implies="{[1, 2]: {pml_ucx_tls: any}}"), "a key must be a plain value"),
    (param(name="map", apply="mpirun", choices="[a, b]", default="a",
           args="{a: [--bind-to, core], b: []}"), "the default 'a' must add no argument"),
    ("name: t\nparameters: []\n", "at least one parameter"),
    ("name: Bad Name\nparameters: []\n", "short lowercase identifier"),
    ("- 1\n", "mapping at the top level"),
    ("name: t\nfrobnicate: 1\nparameters: []\n", "unknown key 'frobnicate'"),
])
def test_malformed_or_unsafe_spaces_are_rejected(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(SpaceError, match=message) as info:
        load_space(str(path))
    assert str(path) in str(info.value)  # the message names the file


def test_nul_byte_is_rejected(tmp_path):
    path = tmp_path / "nul.yaml"
    path.write_bytes(VALID.encode().replace(b"default: all", b"default: a\x00ll"))
    with pytest.raises(SpaceError, match="NUL"):
        load_space(str(path))


def test_oversized_file_is_rejected(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(VALID + "#" * 300_000)
    with pytest.raises(SpaceError, match="larger than"):
        load_space(str(path))


def test_composed_spaces_refuse_duplicates_and_mixed_stacks(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text(VALID)
    with pytest.raises(SpaceError, match="defined twice"):
        load_space(f"{path}+{path}")
    with pytest.raises(SpaceError, match="different MPI stacks"):
        load_space("openmpi-ucx+mpich")


def test_unknown_space_name():
    with pytest.raises(SpaceError, match="unknown search space"):
        load_space("no-such-space")


def test_scope_requirement_must_name_a_scope(tmp_path):
    from autotune.errors import SpaceError
    from autotune.space import load_space
    path = tmp_path / "s.yaml"
    path.write_text("format: 1\nname: s\nparameters:\n"
                    "  - {name: UCX_TLS, apply: env, choices: [all, sm], default: all,\n"
                    "     choice_requires: {sm: {scope: one-node}}}\n")
    with pytest.raises(SpaceError, match="'one-node' is not one of single-node, multi-node"):
        load_space(str(path))
