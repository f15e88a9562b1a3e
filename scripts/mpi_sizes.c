/* What an MPI program sends, by call and message size: a PMPI profiler to LD_PRELOAD into any
 * program built against Open MPI (scripts/bench_app_predict.py builds it with mpicc). Each rank
 * counts its calls of the point-to-point sends and the collectives below by byte count and, at
 * MPI_Finalize, writes "CALL BYTES COUNT" lines to $MPI_SIZES_DIR/rank-<rank>.txt. Counting only:
 * every call goes on to the MPI library unchanged. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 4096

struct slot { const char *call; long long bytes; long long count; };
static struct slot slots[SLOTS];

static void note(const char *call, int count, MPI_Datatype type) {
    int size = 0;
    PMPI_Type_size(type, &size);
    long long bytes = (long long)count * size;
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].call == NULL) {
            slots[i].call = call;
            slots[i].bytes = bytes;
        }
        if (strcmp(slots[i].call, call) == 0 && slots[i].bytes == bytes) {
            slots[i].count++;
            return;
        }
    }
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    note("send", count, type);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
    note("send", count, type);
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    note("send", count, type);
    return PMPI_Rsend(buf, count, type, dest, tag, comm);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status) {
    note("send", scount, stype);
    return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                         comm, status);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
    note("allreduce", count, type);
    return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
    note("reduce", count, type);
    return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    note("bcast", count, type);
    return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) {
    note("allgather", scount, stype);
    return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm) {
    note("alltoall", scount, stype);
    return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm) {
    note("scan", count, type);
    return PMPI_Scan(sbuf, rbuf, count, type, op, comm);
}

int MPI_Barrier(MPI_Comm comm) {
    note("barrier", 0, MPI_BYTE);
    return PMPI_Barrier(comm);
}

int MPI_Finalize(void) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = getenv("MPI_SIZES_DIR");
    if (dir != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.txt", dir, rank);
        FILE *out = fopen(path, "w");
        if (out != NULL) {
            for (int i = 0; i < SLOTS && slots[i].call != NULL; i++)
                fprintf(out, "%s %lld %lld\n", slots[i].call, slots[i].bytes, slots[i].count);
            fclose(out);
        }
    }
    return PMPI_Finalize();
}
