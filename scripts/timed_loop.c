/* IMB-MPI1's allreduce loop in C, to be called from a Python process through ctypes
 * (scripts/bench_timer.py): each call timed alone, an untimed barrier after it, as IMB times it.
 * Handles come as Fortran integers (mpi4py's py2f()), so the same source builds for any MPI ABI.
 *
 *   mpicc -O2 -shared -fPIC -o timed_loop.so scripts/timed_loop.c
 */
#include <mpi.h>

/* Seconds summed over `iters` calls of MPI_Allreduce on this rank. */
double time_allreduce(MPI_Fint comm_f, void *send, void *recv, int count, MPI_Fint type_f,
                      MPI_Fint op_f, int iters)
{
    MPI_Comm comm = MPI_Comm_f2c(comm_f);
    MPI_Datatype type = MPI_Type_f2c(type_f);
    MPI_Op op = MPI_Op_f2c(op_f);
    double total = 0.0;
    for (int i = 0; i < iters; i++) {
        double start = MPI_Wtime();
        MPI_Allreduce(send, recv, count, type, op, comm);
        total += MPI_Wtime() - start;
        MPI_Barrier(comm);
    }
    return total;
}
