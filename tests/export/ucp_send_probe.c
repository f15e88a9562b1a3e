/* Logs the byte count of every tagged UCX send of the rank it is preloaded into (MPICH's ch4:ucx
 * sends every point-to-point message, and so every step of a collective's algorithm, through
 * ucp_tag_send_nbx or ucp_tag_send_sync_nbx). Rank 0 only (PMI_RANK), one line per send on
 * stderr: the tests tell which algorithm MPICH ran from the sizes of its messages. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*tag_send_fn)(void *, const void *, size_t, uint64_t, const void *);

static void *logged(const char *name, void *ep, const void *buf, size_t count, uint64_t tag,
                    const void *param) {
    /* libucp came in with the MPI library a Python extension loaded (RTLD_LOCAL): RTLD_NEXT
     * does not see it, its handle does */
    void *ucp = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
    tag_send_fn real = (tag_send_fn)dlsym(ucp ? ucp : RTLD_NEXT, name);
    const char *rank = getenv("PMI_RANK");
    if (rank && strcmp(rank, "0") == 0)
        fprintf(stderr, "UCP-SEND %zu\n", count);
    return real(ep, buf, count, tag, param);
}

void *ucp_tag_send_nbx(void *ep, const void *buf, size_t count, uint64_t tag, const void *param) {
    return logged("ucp_tag_send_nbx", ep, buf, count, tag, param);
}

void *ucp_tag_send_sync_nbx(void *ep, const void *buf, size_t count, uint64_t tag,
                            const void *param) {
    return logged("ucp_tag_send_sync_nbx", ep, buf, count, tag, param);
}
