/* IMB-MPI1's timed loops for the mpi4py kernel (autotune/benchmarks/_c_loops.py): each call timed
 * alone and followed by an untimed barrier, as IMB times a blocking collective. Timed in Python,
 * every call also pays the interpreter's work around it (0.1-0.6 us on the project's VM), which
 * squeezes small-size ratios towards 1 (docs/evidence/kernel-fidelity.md). Handles come as Fortran
 * integers (mpi4py's py2f()), so one source builds for any MPI ABI. Each returns the sum of the
 * calls' times on this rank, in seconds. */
#include <mpi.h>
#include <string.h>

/* The library this file was built against: the loader compares it with the running one. */
int timed_loops_library(char *out, int len)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(version, &n);
    strncpy(out, version, (size_t)len - 1);
    out[len - 1] = '\0';
    return n;
}

#define TIMED(call)                                  \
    MPI_Comm comm = MPI_Comm_f2c(comm_f);            \
    double total = 0.0;                              \
    for (int i = 0; i < iters; i++) {                \
        double start = MPI_Wtime();                  \
        call;                                        \
        total += MPI_Wtime() - start;                \
        MPI_Barrier(comm);                           \
    }                                                \
    return total;

double timed_allreduce(MPI_Fint comm_f, void *send, void *recv, int count, MPI_Fint type_f,
                       MPI_Fint op_f, int iters)
{
    MPI_Datatype type = MPI_Type_f2c(type_f);
    MPI_Op op = MPI_Op_f2c(op_f);
    TIMED(MPI_Allreduce(send, recv, count, type, op, comm))
}

double timed_reduce(MPI_Fint comm_f, void *send, void *recv, int count, MPI_Fint type_f,
                    MPI_Fint op_f, int iters)
{
    MPI_Datatype type = MPI_Type_f2c(type_f);
    MPI_Op op = MPI_Op_f2c(op_f);
    TIMED(MPI_Reduce(send, recv, count, type, op, 0, comm))
}

double timed_allgather(MPI_Fint comm_f, void *send, void *recv, int count, MPI_Fint type_f,
                       MPI_Fint op_f, int iters)
{
    MPI_Datatype type = MPI_Type_f2c(type_f);
    (void)op_f;
    TIMED(MPI_Allgather(send, count, type, recv, count, type, comm))
}

double timed_alltoall(MPI_Fint comm_f, void *send, void *recv, int count, MPI_Fint type_f,
                      MPI_Fint op_f, int iters)
{
    MPI_Datatype type = MPI_Type_f2c(type_f);
    (void)op_f;
    TIMED(MPI_Alltoall(send, count, type, recv, count, type, comm))
}

double timed_bcast(MPI_Fint comm_f, void *send, void *recv, int count, MPI_Fint type_f,
                   MPI_Fint op_f, int iters)
{
    MPI_Datatype type = MPI_Type_f2c(type_f);
    (void)recv;
    (void)op_f;
    TIMED(MPI_Bcast(send, count, type, 0, comm))
}
