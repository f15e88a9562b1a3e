"""A multi-host test bed on one machine: each "host" is a network namespace on a private bridge
(a subnet used only inside the namespaces this test made), and Open MPI reaches it through a
remote-launch agent that runs its daemon inside the namespace under its own host name."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SUBNET = "10.78.{n}.0/24"
_created = 0


def _prefix() -> str:
    return f"at{os.getpid() % 100000}x"


@dataclass
class TestBed:
    hosts: list[str]
    agent: str
    site_mca: list[str]  # --launcher-mca values
    tag: str = ""  # prefix of the namespaces (<tag>h1, ...) and links
    gateway: str = ""  # this machine's address on the bridge
    calls: str = ""  # a file the agent appends each host it was asked to reach to

    def launcher_args(self) -> list[str]:
        return [arg for item in self.site_mca for arg in ("--launcher-mca", item)]

    def hydra_env(self) -> dict[str, str]:
        """The same site settings for MPICH's Hydra, in its own environment variables: the agent
        as its ssh, and the bridge as the interface its proxies call back on."""
        return {"HYDRA_LAUNCHER": "ssh", "HYDRA_LAUNCHER_EXEC": self.agent,
                "HYDRA_IFACE": f"{self.tag}br"}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def create(tmp: Path, count: int = 2) -> TestBed:
    """Build `count` hosts; raise RuntimeError with the reason when namespaces are not possible."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        raise RuntimeError("network namespaces need root, iproute2 and unshare")
    global _created
    _created += 1
    tag = f"{_prefix()}{_created}"  # fresh names per bed: a deleted one may linger a moment
    n = (os.getpid() + 37 * _created) % 200 + 20
    bridge = f"{tag}br"
    try:
        _ip("link", "add", bridge, "type", "bridge")
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"cannot create a bridge: {exc.stderr.decode().strip()}") from None
    try:
        return _build(tmp, count, tag, n, bridge)
    except BaseException:
        destroy()
        raise


def _build(tmp: Path, count: int, tag: str, n: int, bridge: str) -> TestBed:
    tmp.mkdir(parents=True, exist_ok=True)
    _ip("addr", "add", f"10.78.{n}.1/24", "dev", bridge)
    _ip("link", "set", bridge, "up")
    hosts, cases = [], []
    for i in range(1, count + 1):
        ns, veth, addr = f"{tag}h{i}", f"{tag}v{i}", f"10.78.{n}.{10 + i}"
        _ip("netns", "add", ns)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", veth, "master", bridge, "up")
        _ip("netns", "exec", ns, "ip", "addr", "add", f"{addr}/24", "dev", "eth0")
        _ip("netns", "exec", ns, "ip", "link", "set", "eth0", "up")
        _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        hosts.append(addr)
        cases.append(f"  {addr}) ns={ns};;")
    agent = tmp / "netns-agent.sh"
    # Open MPI calls: agent HOST COMMAND...; COMMAND is a shell line (it may start with PATH=...);
    # Hydra calls it as it calls ssh: agent -x HOST PROXY ARGS...
    agent.write_text("#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done  # ssh options\n"
                     f"host=$1; shift\necho \"$host\" >> {tmp / 'agent-calls.log'}\n"
                     "case $host in\n" + "\n".join(cases)
                     + "\n  *) echo \"unknown test host $host\" >&2; exit 1;;\nesac\n"
                     'exec ip netns exec $ns unshare --uts sh -c "hostname $ns; $*"\n')
    agent.chmod(0o755)
    subnet = SUBNET.format(n=n)
    return TestBed(hosts=hosts, agent=str(agent), tag=tag, gateway=f"10.78.{n}.1",
                   calls=str(tmp / "agent-calls.log"),
                   site_mca=[f"plm_rsh_agent={agent}", f"oob_tcp_if_include={subnet}",
                             f"btl_tcp_if_include={subnet}"])


def destroy() -> None:
    """Remove every bed this process made."""
    tag = _prefix()
    for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n"):
        name = ns.split(" ")[0]
        if name.startswith(tag):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
    for line in subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout.splitlines():
        name = line.split(" ")[0].split("@")[0]
        if name.startswith(tag) and name.endswith("br"):
            subprocess.run(["ip", "link", "del", name], capture_output=True)
