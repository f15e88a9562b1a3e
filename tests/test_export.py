import pytest

from autotune.errors import StorageError
from autotune.export import BestConfig, env_file


def best(**overrides):
    fields = dict(study="s", trial=3, value=-0.1, speedup=1.105, is_default=False,
                  params={"UCX_TLS": "self,sm"}, env={"UCX_TLS": "self,sm"}, mca={"pml": "ucx"},
                  mpirun_args=("--map-by", "numa"), host={"host": "n1", "mpi": "Open MPI 4.1.4"},
                  context={"NPS": 2}, config=None, n_complete=4)
    fields.update(overrides)
    return BestConfig(**fields)


def test_env_file_exports_env_mca_and_mpirun_args():
    text = env_file(best())
    assert "export UCX_TLS=self,sm" in text and "export OMPI_MCA_pml=ucx" in text
    assert "export AUTOTUNE_MPIRUN_ARGS='--map-by numa'" in text
    assert "NPS=2" in text.splitlines()[3]  # measured on nodes with this NPS (not settable)


@pytest.mark.parametrize("overrides", [
    {"env": {"X=1; touch /tmp/pwned; Y": "1"}},
    {"env": {"UCX_TLS": "$(reboot)"}},
    {"env": {"LD_PRELOAD": "/tmp/evil.so"}},
    {"mca": {"plm_rsh_agent": "evil"}},
    {"mpirun_args": ("--map-by", "numa", "/bin/sh")},
])
def test_unsafe_stored_settings_are_not_exported(overrides):
    with pytest.raises(StorageError, match="not safe to export"):
        env_file(best(**overrides))


def test_header_fields_cannot_break_out_of_their_comment():
    text = env_file(best(study="s\ntouch /tmp/pwned", context={"NPS": "1\necho hi"}))
    assert all(line.startswith(("#", "export ")) for line in text.splitlines())


def test_trailing_newline_in_a_stored_name_is_refused():
    with pytest.raises(StorageError):
        env_file(best(env={"UCX_TLS\n": "all"}))
