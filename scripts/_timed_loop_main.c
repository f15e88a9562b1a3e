/* Built and run by scripts/bench_timer.py: the kernel's C loop (autotune/benchmarks/timed_loops.c,
 * compiled in beside this file) driven from a C program instead of a Python process, with the
 * kernel's per-size method (estimate, warm-up of a quarter, timed loop) and malloc'd buffers, as
 * IMB allocates them. Prints one line `TIMED {"size": t_max_us, ...}` on rank 0.
 * Usage: mpirun -np 2 PROGRAM SIZE,SIZE,... TIME_PER_SIZE */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double timed_allreduce(MPI_Fint comm_f, void *send, void *recv, int count, MPI_Fint type_f,
                       MPI_Fint op_f, int iters);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIZE,SIZE,... TIME_PER_SIZE\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double budget = atof(argv[2]);
    MPI_Fint comm = MPI_Comm_c2f(MPI_COMM_WORLD), type = MPI_Type_c2f(MPI_FLOAT),
             op = MPI_Op_c2f(MPI_SUM);
    if (rank == 0)
        printf("TIMED {");
    const char *sep = "";
    for (char *item = strtok(argv[1], ","); item != NULL; item = strtok(NULL, ",")) {
        int size = atoi(item), count = size / 4 > 0 ? size / 4 : 1;
        float *send = malloc((size_t)count * sizeof(float)),
              *recv = calloc((size_t)count, sizeof(float));
        for (int i = 0; i < count; i++)
            send[i] = 1.0f;
        timed_allreduce(comm, send, recv, count, type, op, 3); /* first calls: cold */
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime(), estimate;
        timed_allreduce(comm, send, recv, count, type, op, 3);
        double mine = (MPI_Wtime() - start) / 3;
        MPI_Allreduce(&mine, &estimate, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double fitted = budget / (estimate > 1e-7 ? estimate : 1e-7);
        int iters = fitted > 20000 ? 20000 : fitted < 5 ? 5 : (int)fitted;
        timed_allreduce(comm, send, recv, count, type, op, iters / 4 > 10 ? iters / 4 : 10);
        MPI_Barrier(MPI_COMM_WORLD);
        double per_call = timed_allreduce(comm, send, recv, count, type, op, iters) / iters, t_max;
        MPI_Reduce(&per_call, &t_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%s\"%d\": %.6f", sep, size, t_max * 1e6);
            sep = ", ";
        }
        free(send);
        free(recv);
    }
    if (rank == 0)
        printf("}\n");
    MPI_Finalize();
    return 0;
}
