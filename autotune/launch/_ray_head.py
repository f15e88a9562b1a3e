"""Talking to a Ray cluster's head (GCS) without hanging: a call bounded in time (a dead head
blocks Ray's own calls for minutes), and an address checked before `ray.init` waits on it."""

from __future__ import annotations

import socket
import threading

from ..errors import ClusterLost, EnvironmentProblem, InputError

HEAD_CALL_SECONDS = 15.0


class HeadSilent(ClusterLost):
    """A call that needs the Ray head got no answer in time."""


def ask_head(call, *args, **kwargs):
    """Run a call that needs the Ray head (GCS) in a helper thread. If the head dies during the
    call, Ray blocks until it comes back (seen: ray.nodes() still waiting after 120 s) and may
    end the whole process later; bounded, the run notices the loss and stops cleanly."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = call(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="autotune-ray-head-call", daemon=True)
    thread.start()
    thread.join(HEAD_CALL_SECONDS)
    if thread.is_alive():
        raise HeadSilent(f"the Ray head did not answer {getattr(call, '__name__', 'a call')} "
                         f"within {HEAD_CALL_SECONDS:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def check_reachable(address: str) -> None:
    """Fail at once on an address nobody answers (ray.init would wait a long time)."""
    if "://" in address:
        raise InputError(f"Ray address {address!r}: give the cluster's HOST:PORT (the GCS address "
                         "that `ray start --head` prints), not a client URL")
    try:
        host, port = split_address(address)
    except ValueError:
        raise InputError(f"Ray address {address!r}: expected HOST:PORT") from None
    try:
        socket.create_connection((host, port), timeout=5.0).close()
    except OSError as exc:
        raise EnvironmentProblem(f"no Ray cluster answers at {address}: {exc.strerror or exc}") from None
