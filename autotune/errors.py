"""One exception root; the CLI turns any AutotuneError into a one-line message and exit code."""


class AutotuneError(Exception):
    """Root of every error autotune raises on purpose (bad input, unusable environment)."""

    exit_code = 1


class InputError(AutotuneError):
    """A CLI value, a file or a setting given by the user is invalid."""

    exit_code = 2


class SpaceError(InputError):
    """A search-space file is malformed or unsafe."""


class StorageError(AutotuneError):
    """The study storage cannot be opened, or holds something we cannot use."""


class EnvironmentProblem(AutotuneError):
    """The machine lacks something required (mpirun, a host, cores)."""


class LaunchFailure(AutotuneError):
    """One benchmark launch failed; the trial fails with `reason` (timeout, config, crash,
    infrastructure, interrupted), the study goes on."""

    def __init__(self, reason: str, detail: str = "", stderr_tail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.stderr_tail = stderr_tail


class BenchmarkOutputError(LaunchFailure):
    """The benchmark ran but its output is missing, truncated or malformed: a crash of the run."""

    def __init__(self, detail: str, stderr_tail: str = "") -> None:
        super().__init__("crash", f"benchmark output: {detail}", stderr_tail)


class ClusterLost(AutotuneError):
    """The cluster that places trials is gone (the Ray head, ...): the run stops, the study stays;
    the trial that was running is queued again for the next start."""


class NothingNew(AutotuneError):
    """The sampler keeps proposing configurations already measured or refused: the run is done."""


class NoNodes(AutotuneError):
    """No node group could be reserved in time (nodes lost or held by others)."""


class StopRequested(BaseException):
    """SIGTERM/SIGINT/SIGHUP: stop launching, fail and re-queue the running trial, exit 0.
    A BaseException, like KeyboardInterrupt, so no `except Exception` swallows it. Raised by the
    daemon's signal handlers, caught by the controller: it lives here so neither imports the other."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(signal.Signals(signum).name)
        self.signum = signum
