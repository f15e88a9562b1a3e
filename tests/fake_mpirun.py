#!/usr/bin/env python3
"""A fake mpirun that injects faults (never used to fake results). Mode from FAKE_MPIRUN_MODE."""
import json
import os
import subprocess
import sys
import time

mode = os.environ.get("FAKE_MPIRUN_MODE", "segfault")
if mode == "faults":
    value = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("UCX_RNDV_THRESH=")), 8192)
    if value == 8192:
        real = os.environ.get("FAKE_REAL_MPIRUN", "/usr/bin/mpirun")
        os.execv(real, [real, *sys.argv[1:]])
    cycle = ["segfault", "abort", "garbage", "flood", "truncated", "negative", "init-error"]
    mode = "hang" if value % 50 == 0 else cycle[value % len(cycle)]
pidfile = os.environ.get("FAKE_MPIRUN_PIDFILE")
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if pidfile:
        with open(pidfile, "w") as handle:
            handle.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(600)
elif mode == "init-error":
    sys.stderr.write("[vm:01234] *** An error occurred in MPI_Init_thread\n"
                     "ucp_ep_create(proc=1) failed: Destination is unreachable\n")
    sys.exit(1)
elif mode == "abort":
    sys.stderr.write("MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\n"
                     "with errorcode 1.\n[vm:01] PML add procs failed\n")
    sys.exit(1)
elif mode == "segfault":
    sys.stderr.write("[vm:01234] *** Process received signal ***\n")
    sys.stderr.flush()
    os.kill(os.getpid(), 11)
elif mode == "infra":
    sys.stderr.write("ORTE was unable to reliably start one or more daemons.\n")
    sys.exit(1)
elif mode == "garbage":
    print("AUTOTUNE {not json at all")
elif mode == "truncated":
    print("AUTOTUNE " + json.dumps({"kind": "start", "ranks": 2, "hosts": ["h"]}))
    print("AUTOTUNE " + json.dumps({"kind": "size", "size": 8, "iters": 10, "t_max_us": 1.0,
                                    "t_min_us": 1.0, "t_avg_us": 1.0}))
elif mode == "flood":
    chunk = "x" * 65536 + "\n"
    for _ in range(200):  # 13 MB, beyond the capture limit
        sys.stdout.write(chunk)
elif mode == "negative":
    print("AUTOTUNE " + json.dumps({"kind": "start", "ranks": 2, "hosts": ["h"]}))
    print("AUTOTUNE " + json.dumps({"kind": "size", "size": 8, "iters": 10, "t_max_us": -1.0,
                                    "t_min_us": 1.0, "t_avg_us": 1.0}))
    print("AUTOTUNE " + json.dumps({"kind": "done"}))

# mode "faults": the default configuration (UCX_RNDV_THRESH=8192) runs on the real mpirun; every
# other one fails in a way chosen by its value, so a whole study of failures can be driven.
