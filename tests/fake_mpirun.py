#!/usr/bin/env python3
"""A fake mpirun that injects faults (never used to fake results). Mode from FAKE_MPIRUN_MODE."""
import json
import os
import subprocess
import sys
import time

mode = os.environ.get("FAKE_MPIRUN_MODE", "crash")
pidfile = os.environ.get("FAKE_MPIRUN_PIDFILE")
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if pidfile:
        with open(pidfile, "w") as handle:
            handle.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(600)
elif mode == "crash":
    sys.stderr.write("[vm:01234] *** An error occurred in MPI_Init_thread\n"
                     "ucp_ep_create(proc=1) failed: Destination is unreachable\n")
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
