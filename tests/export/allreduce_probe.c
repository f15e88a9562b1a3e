/* LD_PRELOAD probe: which coll/base allreduce algorithm Open MPI's coll_tuned component runs.
 *
 * mca_coll_tuned.so calls the algorithms as undefined symbols that libmpi.so exports
 * (`nm -D mca_coll_tuned.so | grep ' U ompi_coll_base_allreduce_intra_'`), so a preloaded library
 * that defines the same names runs first: each wrapper appends one line to
 * $AUTOTUNE_PROBE_LOG.<pid> and calls the real function (dlsym RTLD_NEXT). Signatures: ALLREDUCE_ARGS
 * of ompi/mca/coll/base/coll_base_functions.h (Open MPI 4.1/5.0); ring_segmented adds a segsize.
 * Built by tests/export/test_ompi_rules_applied.py with `cc -shared -fPIC ... -ldl`.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*allreduce_fn)(const void *, void *, int, void *, void *, void *, void *);
typedef int (*segmented_fn)(const void *, void *, int, void *, void *, void *, void *, uint32_t);

static void record(const char *name, int count, unsigned segsize)
{
    const char *prefix = getenv("AUTOTUNE_PROBE_LOG");
    char path[4096];
    FILE *out;

    if (prefix == NULL)
        return;
    snprintf(path, sizeof(path), "%s.%ld", prefix, (long) getpid());
    out = fopen(path, "a");
    if (out == NULL)
        return;
    fprintf(out, "call %s count=%d segsize=%u\n", name, count, segsize);
    fclose(out);
}

#define PROBE(name)                                                                    \
    int name(const void *sbuf, void *rbuf, int count, void *dtype, void *op, void *comm, \
             void *module)                                                             \
    {                                                                                  \
        static allreduce_fn real;                                                      \
        if (real == NULL)                                                              \
            real = (allreduce_fn) dlsym(RTLD_NEXT, #name);                             \
        record(#name, count, 0);                                                       \
        return real(sbuf, rbuf, count, dtype, op, comm, module);                       \
    }

PROBE(ompi_coll_base_allreduce_intra_basic_linear)
PROBE(ompi_coll_base_allreduce_intra_nonoverlapping)
PROBE(ompi_coll_base_allreduce_intra_recursivedoubling)
PROBE(ompi_coll_base_allreduce_intra_ring)
PROBE(ompi_coll_base_allreduce_intra_redscat_allgather)

int ompi_coll_base_allreduce_intra_ring_segmented(const void *sbuf, void *rbuf, int count,
                                                  void *dtype, void *op, void *comm,
                                                  void *module, uint32_t segsize)
{
    static segmented_fn real;
    if (real == NULL)
        real = (segmented_fn) dlsym(RTLD_NEXT, "ompi_coll_base_allreduce_intra_ring_segmented");
    record("ompi_coll_base_allreduce_intra_ring_segmented", count, segsize);
    return real(sbuf, rbuf, count, dtype, op, comm, module, segsize);
}
