"""An "application" for the app-benchmark tests, run under mpirun as the user's program would be:
it prints `elapsed SECONDS`, unless the configuration's coll_tuned algorithm (which Open MPI puts
in each rank's environment) tells it to fail: 3 exits 3, 4 hangs, 5 prints no metric."""
import os
import sys
import time

algorithm = os.environ.get("OMPI_MCA_coll_tuned_allreduce_algorithm", "0")
if algorithm == "3":
    print("fake_app: giving up", file=sys.stderr)
    sys.exit(3)
if algorithm == "4":
    time.sleep(3600)
if algorithm == "5":
    print("fake_app: done, but no figure today")
    sys.exit(0)
time.sleep(0.05 + 0.01 * int(algorithm))
print(f"elapsed {0.05 + 0.01 * int(algorithm):.3f}")
