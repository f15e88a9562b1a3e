import json

import pytest

from autotune.probe import NumaLayout, parse_ompi_info, parse_ucx_devices, read_numa_layout

OMPI_INFO = """\
ompi:version:full:4.1.4
mca:coll:tuned:version:mca:2.1.0
mca:coll:hcoll:version:mca:2.1.0
mca:pml:ucx:version:mca:2.1.0
mca:coll:tuned:param:coll_tuned_allreduce_algorithm:value:ignore
mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:0:ignore
mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:4:ring
mca:pml:ucx:param:pml_ucx_devices:value:mlx*
"""

UCX_DEVICES = """\
#      Transport: self
#         Device: memory0
#      Transport: rc_mlx5
#         Device: mlx5_0:1
#      Transport: ud_verbs
#         Device: mlx5_0:1
"""


def test_parse_ompi_info():
    version, components, enumerators, defaults = parse_ompi_info(OMPI_INFO)
    assert version == "4.1.4"
    assert components == {"coll": ["tuned", "hcoll"], "pml": ["ucx"]}
    assert enumerators == {"coll_tuned_allreduce_algorithm": [0, 4]}
    assert defaults["pml_ucx_devices"] == "mlx*"


def test_parse_ucx_devices():
    assert parse_ucx_devices(UCX_DEVICES) == {"self": ["memory0"], "rc_mlx5": ["mlx5_0:1"],
                                              "ud_verbs": ["mlx5_0:1"]}


def test_numa_layout_from_sysfs(tmp_path):
    for cpu, package in enumerate([0, 0, 1, 1]):
        topo = tmp_path / f"cpu/cpu{cpu}/topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{package}\n")
    for node in range(4):
        (tmp_path / f"node/node{node}").mkdir(parents=True)
    layout = read_numa_layout(str(tmp_path))
    assert (layout.sockets, layout.numa_nodes, layout.nps) == (2, 4, 2)
    assert NumaLayout(2, 4, 72).cores_per_numa == 18


@pytest.mark.mpi
def test_probe_reports_this_machine(autotune_cli):
    data = json.loads(autotune_cli("probe", "--format", "json", check=True).stdout)
    assert data["mpi_family"] == "openmpi" and data["mpi_version"].startswith("4.1")
    assert {"tuned", "basic", "han", "adapt", "libnbc"} <= set(data["components"]["coll"])
    assert "hcoll" not in data["components"]["coll"]
    assert data["ucx_version"].startswith("1.13")
    assert {"self", "tcp", "sysv", "posix", "cma"} <= set(data["ucx_transports"])
    assert data["numa"]["nps"] >= 1 and data["numa"]["cores"] >= 1
    assert data["pml_ucx_selected_by_default"] is False  # no mlx* device here: must be forced
    text = autotune_cli("probe", check=True).stdout
    assert "NOT selected by default" in text and "--mca pml ucx" in text


def test_node_probe_round_trips_and_refuses_garbage():
    import subprocess
    import sys

    from autotune.probe import parse_node_probe, probe_capabilities

    out = subprocess.run([sys.executable, "-m", "autotune.probe"], capture_output=True, text=True,
                         check=True).stdout
    caps, host = parse_node_probe("some MPI noise\n" + out)
    here = probe_capabilities()
    differing = {k: (caps.mca_defaults.get(k), here.mca_defaults.get(k))
                 for k in caps.mca_defaults.keys() | here.mca_defaults.keys()
                 if caps.mca_defaults.get(k) != here.mca_defaults.get(k)}
    assert not differing, f"ompi_info read differently a moment apart: {differing}"
    assert caps == here and host.cores >= 1 and host.cpu_model
    for text, message in [("", "printed no result"), ("AUTOTUNE-NODE-PROBE {not json", "unreadable"),
                          ('AUTOTUNE-NODE-PROBE {"capabilities": {}}', "unreadable")]:
        with pytest.raises(ValueError, match=message):
            parse_node_probe(text)
