/* autotune's C benchmark: times one blocking collective with IMB-MPI1's method, in a process of
 * its own (no interpreter, no numpy), built with the MPI's own compiler wrapper (_cbench.py).
 *
 * Why a program of its own (docs/evidence/kernel-fidelity.md): the mpi4py kernel times IMB's
 * loop in C but runs it inside a Python process, on numpy buffers allocated per size, over
 * sizes in a shuffled order; its speedups sat a few pp off IMB's with a sign that changed with
 * the CPU and the hour. This program repeats IMB-MPI1's method step by step (src_c/IMB_2018.c,
 * IMB_mem_manager.c, IMB_warm_up.c and the IMB_<collective>.c kernels of IMB 2021), so that the
 * only difference left between the two is the code that is not the method: IMB's own.
 *
 * Per size, in ascending order after a size of 0 bytes (IMB's -zero_size on):
 *   buffers: MPI_Alloc_mem, grown (freed and allocated again) only when a size needs more, and
 *     filled whole before each size (IMB_set_buf): IMB's float pattern 0.1*(rank+1)+i;
 *   one checked call on known inputs (IMB checks nothing unless built with CHECK): a wrong
 *     result stops every rank with a `wrong-result` record;
 *   repetitions: n = max(1, min(overall_vol / size, iter)) (IMB -iter N,40), then IMB's dynamic
 *     policy: one timed call, then min(n, 1000 or 1/t) calls, n = min(n, previous size's n,
 *     1 + secs / t) with t the slowest rank's time per call (IMB -time secs);
 *   a warm-up of n/10 calls (at least min(10, n));
 *   the measured run: 2 barriers, then each call timed alone, a barrier after it (untimed);
 *   t_max, t_min, t_avg over the ranks of each rank's mean time per call.
 * Bcast and reduce use root 0 (IMB's -root_shift 0). Like IMB (IMB_set_communicator), the
 * collective and its barriers run on a communicator split from MPI_COMM_WORLD.
 *
 * Output: one JSON record per line, prefixed `AUTOTUNE ` (the mpi4py kernel's records:
 * start, size, done, wrong-result), rank 0 only. A size record also carries `minflt`, the most
 * minor page faults a rank took during the measured run (evidence of allocation inside the
 * collective).
 *
 * Levers that depart from IMB's method, for the fidelity study only (scripts/bench_levers.py):
 *   --alloc malloc       buffers from malloc instead of MPI_Alloc_mem
 *   --buffers fresh      new buffers for every size, freed after it (as the kernel's numpy)
 *   --order shuffled     sizes in a seeded random order (as the kernel)
 *   --iter-policy budget repetitions fitted to --time-per-size seconds (as the kernel)
 *   --no-zero-size       no 0-byte size first
 *   --comm world         time on MPI_COMM_WORLD itself, not on a communicator split from it
 *
 * Test only: AUTOTUNE_TEST_CORRUPT_RANK=<rank> (or OMPI_MCA_mpi_autotune_test_corrupt_rank)
 * corrupts that rank's checked result, and AUTOTUNE_TEST_POISON_RECORD=1 (or
 * OMPI_MCA_mpi_autotune_test_poison_record) prints one size record whose count has 400 digits
 * before the done record, as in the kernel.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#define MAX_SIZES 256
#define HOST_LEN 256
#define IMB_MSGSPERSAMPLE 1000 /* IMB_settings.h: the cap of the calibration run */
#define IMB_WARMUP_PERCENT 10
#define IMB_MIN_WARMUP 10
#define IMB_N_BARR 2
#define BYTE_PERIOD 251

enum coll { ALLREDUCE, ALLGATHER, ALLTOALL, BCAST, REDUCE };
static const char *COLL_NAMES[] = {"allreduce", "allgather", "alltoall", "bcast", "reduce"};

struct options {
    enum coll coll;
    long sizes[MAX_SIZES];
    int nsizes;
    long iter;          /* IMB -iter N: most repetitions of a size */
    long overall_vol;   /* IMB -iter N,V: bytes a size may move in all (V MiB) */
    double secs;        /* IMB -time: seconds a size's repetitions aim at, at most */
    unsigned seed;
    int alloc_malloc, fresh, shuffled, budget, zero_size, world;
    double time_per_size;
};

struct bench {
    MPI_Comm comm;
    int rank, np;
    enum coll coll;
    char *s_buf, *r_buf;
    size_t s_alloc, r_alloc;
    int alloc_malloc;
};

static void die(const char *text)
{
    fprintf(stderr, "autotune cbench: %s\n", text);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

/* ---- output ------------------------------------------------------------------------------ */

static void json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\u%04x", *p < 0x7f ? *p : '?');
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* ---- buffers ----------------------------------------------------------------------------- */

static void *allocate(struct bench *b, size_t bytes)
{
    void *ptr = NULL;
    if (bytes < sizeof(size_t))
        bytes = sizeof(size_t);
    if (b->alloc_malloc)
        ptr = malloc(bytes);
    else if (MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &ptr) != MPI_SUCCESS)
        ptr = NULL;
    if (ptr == NULL)
        die("cannot allocate the buffers");
    return ptr;
}

static void release(struct bench *b, char **buf, size_t *have)
{
    if (*buf == NULL)
        return;
    if (b->alloc_malloc)
        free(*buf);
    else
        MPI_Free_mem(*buf);
    *buf = NULL;
    *have = 0;
}

/* IMB_alloc_buf: a buffer is replaced only when it is too small */
static void ensure(struct bench *b, char **buf, size_t *have, size_t need)
{
    if (need < 1)
        need = 1;
    if (*have >= need)
        return;
    release(b, buf, have);
    *buf = allocate(b, need);
    *have = need;
}

static void lengths(enum coll coll, long size, int np, size_t *s_len, size_t *r_len)
{
    size_t n = (size_t)(size > 4 ? size : 4); /* IMB's init_size = max(size, asize) */
    switch (coll) {
    case ALLGATHER: *s_len = n; *r_len = (size_t)np * n; break;
    case ALLTOALL: *s_len = *r_len = (size_t)np * n; break;
    default: *s_len = *r_len = n;
    }
}

/* IMB_set_buf over the whole allocation: the send pattern, zeros to receive into */
static void fill_imb(struct bench *b)
{
    float *s = (float *)b->s_buf, *r = (float *)b->r_buf;
    for (size_t i = 0; i < b->s_alloc / sizeof(float); i++)
        s[i] = (float)(0.1 * (b->rank + 1) + (float)i);
    for (size_t i = 0; i < b->r_alloc / sizeof(float); i++)
        r[i] = 0.f;
}

/* ---- one call ---------------------------------------------------------------------------- */

static int call(struct bench *b, long size)
{
    int count = (int)(b->coll == ALLREDUCE || b->coll == REDUCE ? size / 4 : size);
    void *bc = b->rank == 0 ? b->s_buf : b->r_buf;
    switch (b->coll) {
    case ALLREDUCE:
        return MPI_Allreduce(b->s_buf, b->r_buf, count, MPI_FLOAT, MPI_SUM, b->comm);
    case REDUCE:
        return MPI_Reduce(b->s_buf, b->r_buf, count, MPI_FLOAT, MPI_SUM, 0, b->comm);
    case ALLGATHER:
        return MPI_Allgather(b->s_buf, count, MPI_BYTE, b->r_buf, count, MPI_BYTE, b->comm);
    case ALLTOALL:
        return MPI_Alltoall(b->s_buf, count, MPI_BYTE, b->r_buf, count, MPI_BYTE, b->comm);
    case BCAST:
        return MPI_Bcast(bc, count, MPI_BYTE, 0, b->comm);
    }
    return MPI_ERR_OTHER;
}

/* IMB's kernel: N_BARR barriers, then each call timed alone and followed by a barrier.
 * Returns this rank's mean seconds per call. */
static double timed(struct bench *b, long size, long n)
{
    double total = 0.0;
    for (int i = 0; i < IMB_N_BARR; i++)
        MPI_Barrier(b->comm);
    for (long i = 0; i < n; i++) {
        total -= MPI_Wtime();
        if (call(b, size) != MPI_SUCCESS)
            die("the collective returned an error");
        total += MPI_Wtime();
        MPI_Barrier(b->comm);
    }
    return n > 0 ? total / (double)n : 0.0;
}

/* ---- the result check -------------------------------------------------------------------- */

static unsigned char pattern(int src, int dst, size_t i)
{
    return (unsigned char)((i + (size_t)((37 * src + 101 * dst + 11) % BYTE_PERIOD)) % BYTE_PERIOD);
}

/* A test hook's value: the variable itself, or its MCA spelling (mpirun passes OMPI_MCA_*
 * through to every rank); NULL when neither is set. */
static const char *test_hook(const char *name, const char *mca_name)
{
    const char *value = getenv(name);
    if (value && *value)
        return value;
    value = getenv(mca_name);
    return value && *value ? value : NULL;
}

static int corrupt_rank(void)
{
    const char *value = test_hook("AUTOTUNE_TEST_CORRUPT_RANK",
                                  "OMPI_MCA_mpi_autotune_test_corrupt_rank");
    return value ? atoi(value) : -1;
}

static int poison_record(void)
{
    const char *value = test_hook("AUTOTUNE_TEST_POISON_RECORD",
                                  "OMPI_MCA_mpi_autotune_test_poison_record");
    return value && strcmp(value, "1") == 0;
}

/* One call on known inputs; every rank returns the same verdict: -1 when right, else the first
 * bad rank (its element, expected and got in *where). */
static int check(struct bench *b, long size, int corrupt_on, double where[3])
{
    int np = b->np, rank = b->rank;
    double bad[3] = {-1, 0, 0}; /* element, expected, got */
    int has_result = !(b->coll == REDUCE && rank != 0);
    if (b->coll == ALLREDUCE || b->coll == REDUCE) {
        long count = size / 4;
        float *s = (float *)b->s_buf, *r = (float *)b->r_buf;
        for (long i = 0; i < count; i++) {
            s[i] = (float)((rank % 64) + 1 + i % 16);
            r[i] = -1.f;
        }
        if (corrupt_on == rank && !has_result && count > 0)
            s[0] += 1.f;
        call(b, size);
        if (corrupt_on == rank && has_result && count > 0)
            r[0] += 1.f;
        long base = 0;
        for (int q = 0; q < np; q++)
            base += (q % 64) + 1;
        for (long i = 0; has_result && i < count; i++) {
            float want = (float)(base + (long)np * (i % 16));
            if (r[i] != want) {
                bad[0] = (double)i; bad[1] = want; bad[2] = r[i];
                break;
            }
        }
    } else {
        size_t n = (size_t)size;
        unsigned char *s = (unsigned char *)b->s_buf, *r = (unsigned char *)b->r_buf;
        size_t r_count = b->coll == BCAST ? n : (size_t)np * n;
        if (b->coll == ALLGATHER)
            for (size_t i = 0; i < n; i++) s[i] = pattern(rank, 0, i);
        else if (b->coll == ALLTOALL)
            for (int d = 0; d < np; d++)
                for (size_t i = 0; i < n; i++) s[(size_t)d * n + i] = pattern(rank, d, i);
        else if (rank == 0)
            for (size_t i = 0; i < n; i++) s[i] = pattern(0, 0, i);
        if (!(b->coll == BCAST && rank == 0))
            memset(r, 0, r_count);
        call(b, size);
        unsigned char *got = b->coll == BCAST && rank == 0 ? s : r;
        if (corrupt_on == rank && r_count > 0)
            got[0] = (unsigned char)~got[0];
        for (size_t i = 0; i < r_count; i++) {
            unsigned char want = b->coll == BCAST ? pattern(0, 0, i)
                : b->coll == ALLGATHER ? pattern((int)(i / n), 0, i % n)
                : pattern((int)(i / n), rank, i % n);
            if (got[i] != want) {
                bad[0] = (double)i; bad[1] = want; bad[2] = got[i];
                break;
            }
        }
    }
    double *all = malloc(sizeof(double) * 3 * (size_t)np);
    if (all == NULL)
        die("out of memory");
    MPI_Allgather(bad, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, b->comm);
    int first = -1;
    for (int q = 0; q < np && first < 0; q++)
        if (all[3 * q] >= 0) {
            first = q;
            memcpy(where, all + 3 * q, sizeof(double) * 3);
        }
    free(all);
    return first;
}

/* ---- repetitions ------------------------------------------------------------------------- */

static long imb_repetitions(struct bench *b, const struct options *o, long size, long *prev)
{
    long selected = size > 0 ? o->overall_vol / size : o->iter;
    if (selected > o->iter) selected = o->iter;
    if (selected < 1) selected = 1;
    double t = timed(b, size, 1), t_max;
    MPI_Allreduce(&t, &t_max, 1, MPI_DOUBLE, MPI_MAX, b->comm);
    int rep = 1, acc;
    if (t_max < 1.0 / IMB_MSGSPERSAMPLE)
        rep = IMB_MSGSPERSAMPLE;
    else if (t_max < 1.0)
        rep = (int)(1.0 / t_max + 0.5);
    MPI_Allreduce(&rep, &acc, 1, MPI_INT, MPI_MAX, b->comm);
    long n = selected < acc ? selected : acc;
    if (n > 1) {
        t = timed(b, size, n);
        MPI_Allreduce(&t, &t_max, 1, MPI_DOUBLE, MPI_MAX, b->comm);
    }
    float val = (float)(1 + o->secs / t_max);
    long t_sample = (t_max > 1e-8 && val <= (float)INT_MAX) ? (long)val : selected;
    n = selected;
    if (*prev < n) n = *prev;
    if (t_sample < n) n = t_sample;
    MPI_Bcast(&n, 1, MPI_LONG, 0, b->comm);
    *prev = n;
    return n;
}

/* --iter-policy budget: the mpi4py kernel's repetitions, fitted to the time per size */
static long budget_repetitions(struct bench *b, const struct options *o, long size)
{
    MPI_Barrier(b->comm);
    double start = MPI_Wtime();
    for (int i = 0; i < 3; i++) {
        call(b, size);
        MPI_Barrier(b->comm);
    }
    double each = (MPI_Wtime() - start) / 3, worst;
    MPI_Allreduce(&each, &worst, 1, MPI_DOUBLE, MPI_MAX, b->comm);
    double n = o->time_per_size / (worst > 1e-7 ? worst : 1e-7);
    if (n < 5) n = 5;
    if (n > 20000) n = 20000;
    return (long)n;
}

/* ---- the run ----------------------------------------------------------------------------- */

static long minflt(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

/* Unix time with microseconds: the controller subtracts it from its own clock to tell how long a
 * trial waited for its first benchmark; whole seconds could put the start before the ask. */
static double wall_clock(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + now.tv_nsec / 1e9;
}

static void start_record(struct bench *b)
{
    char host[HOST_LEN] = "";
    gethostname(host, HOST_LEN - 1);
    char *hosts = b->rank == 0 ? malloc((size_t)HOST_LEN * b->np) : NULL;
    if (b->rank == 0 && hosts == NULL)
        die("out of memory");
    MPI_Gather(host, HOST_LEN, MPI_CHAR, hosts, HOST_LEN, MPI_CHAR, 0, b->comm);
    if (b->rank != 0)
        return;
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, provided = 0;
    MPI_Get_library_version(library, &len);
    library[strcspn(library, "\n")] = '\0';
    MPI_Query_thread(&provided);
    printf("AUTOTUNE {\"kind\": \"start\", \"time\": %.6f, \"ranks\": %d, \"collective\": \"%s\", "
           "\"benchmark\": \"cbench\", \"thread_level\": \"%s\", \"mpi_library\": ",
           wall_clock(), b->np, COLL_NAMES[b->coll],
           provided == MPI_THREAD_SINGLE ? "single" : "multiple");
    json_string(stdout, library);
    printf(", \"hosts\": [");
    int shown = 0;
    for (int q = 0; q < b->np; q++) {
        const char *h = hosts + (size_t)q * HOST_LEN;
        int seen = 0;
        for (int p = 0; p < q && !seen; p++)
            seen = strncmp(h, hosts + (size_t)p * HOST_LEN, HOST_LEN) == 0;
        if (seen)
            continue;
        printf(shown++ ? ", " : "");
        json_string(stdout, h);
    }
    printf("], \"rank_hosts\": [");
    for (int q = 0; q < b->np; q++) {
        printf(q ? ", " : "");
        json_string(stdout, hosts + (size_t)q * HOST_LEN);
    }
    printf("]}\n");
    fflush(stdout);
    free(hosts);
}

static int measure(struct bench *b, const struct options *o, long size, long *prev,
                   int report, int corrupt_on)
{
    size_t s_len, r_len;
    lengths(b->coll, size, b->np, &s_len, &r_len);
    if (s_len > INT_MAX || r_len > INT_MAX)
        die("a buffer of this size and rank count exceeds an MPI count (2^31 - 1)");
    if (o->fresh) {
        release(b, &b->s_buf, &b->s_alloc);
        release(b, &b->r_buf, &b->r_alloc);
    }
    ensure(b, &b->s_buf, &b->s_alloc, s_len);
    ensure(b, &b->r_buf, &b->r_alloc, r_len);
    if (report) {
        double where[3];
        int bad = check(b, size, corrupt_on, where);
        if (bad >= 0) {
            if (b->rank == 0) {
                printf("AUTOTUNE {\"kind\": \"wrong-result\", \"collective\": \"%s\", \"size\": %ld, "
                       "\"rank\": %d, \"element\": %.0f, \"expected\": %.9g, \"got\": \"%.9g\"}\n",
                       COLL_NAMES[b->coll], size, bad, where[0], where[1], where[2]);
                fflush(stdout);
            }
            return 1;
        }
    }
    fill_imb(b);
    long n = o->budget ? budget_repetitions(b, o, size) : imb_repetitions(b, o, size, prev);
    long warm = n / IMB_WARMUP_PERCENT;
    if (warm < IMB_MIN_WARMUP)
        warm = n < IMB_MIN_WARMUP ? n : IMB_MIN_WARMUP;
    timed(b, size, warm);
    long faults = minflt();
    double mine = timed(b, size, n);
    faults = minflt() - faults;
    MPI_Barrier(MPI_COMM_WORLD);
    double t_max, t_min, t_sum;
    long most_faults;
    MPI_Reduce(&mine, &t_max, 1, MPI_DOUBLE, MPI_MAX, 0, b->comm);
    MPI_Reduce(&mine, &t_min, 1, MPI_DOUBLE, MPI_MIN, 0, b->comm);
    MPI_Reduce(&mine, &t_sum, 1, MPI_DOUBLE, MPI_SUM, 0, b->comm);
    MPI_Reduce(&faults, &most_faults, 1, MPI_LONG, MPI_MAX, 0, b->comm);
    if (report && b->rank == 0) {
        printf("AUTOTUNE {\"kind\": \"size\", \"size\": %ld, \"iters\": %ld, \"t_max_us\": %.6f, "
               "\"t_min_us\": %.6f, \"t_avg_us\": %.6f, \"minflt\": %ld}\n", size, n, t_max * 1e6,
               t_min * 1e6, t_sum / b->np * 1e6, most_faults);
        fflush(stdout);
    }
    if (o->fresh) {
        release(b, &b->s_buf, &b->s_alloc);
        release(b, &b->r_buf, &b->r_alloc);
    }
    return 0;
}

static void usage(const char *why)
{
    fprintf(stderr, "autotune cbench: %s\nusage: cbench --collective C --sizes S1,S2,... "
            "--iter N --overall-vol BYTES --time SECS [--seed N] [--alloc mpi|malloc] "
            "[--buffers grow|fresh] [--order ascending|shuffled] [--iter-policy imb|budget "
            "--time-per-size SECS] [--no-zero-size] [--comm split|world]\n", why);
    exit(2);
}

/* 0 for `off`, 1 for `on`, else a usage error naming both */
static int either(const char *value, const char *off, const char *on, const char *what)
{
    if (strcmp(value, off) && strcmp(value, on)) {
        char why[200];
        snprintf(why, sizeof why, "%s: %s or %s", what, off, on);
        usage(why);
    }
    return !strcmp(value, on);
}

static long number(const char *text, long low, long high, const char *what)
{
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < low || value > high) {
        char why[200];
        snprintf(why, sizeof why, "%s: %.40s is not an integer in %ld..%ld", what, text, low, high);
        usage(why);
    }
    return value;
}

static double seconds(const char *text, const char *what)
{
    char *end = NULL;
    double value = strtod(text, &end);
    if (end == text || *end != '\0' || !(value > 0 && value <= 1e6)) {
        char why[200];
        snprintf(why, sizeof why, "%s: %.40s is not a number of seconds", what, text);
        usage(why);
    }
    return value;
}

static void parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->coll = (enum coll)-1;
    o->overall_vol = 40L * 1024 * 1024;
    o->iter = 1000;
    o->secs = 10;
    o->zero_size = 1;
    o->time_per_size = 0.02;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-zero-size")) { o->zero_size = 0; continue; }
        if (v == NULL) usage("an option without its value");
        i++;
        if (!strcmp(a, "--collective")) {
            for (int c = 0; c < 5; c++)
                if (!strcmp(v, COLL_NAMES[c])) o->coll = (enum coll)c;
            if ((int)o->coll < 0) usage("--collective: allreduce, allgather, alltoall, bcast or reduce");
        } else if (!strcmp(a, "--sizes")) {
            char *copy = strdup(v), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (o->nsizes == MAX_SIZES) usage("--sizes: too many sizes");
                o->sizes[o->nsizes++] = number(t, 1, 1L << 30, "--sizes");
            }
            free(copy);
        } else if (!strcmp(a, "--iter")) o->iter = number(v, 1, 100000000, "--iter");
        else if (!strcmp(a, "--overall-vol")) o->overall_vol = number(v, 1, LONG_MAX / 2, "--overall-vol");
        else if (!strcmp(a, "--time")) o->secs = seconds(v, "--time");
        else if (!strcmp(a, "--time-per-size")) o->time_per_size = seconds(v, "--time-per-size");
        else if (!strcmp(a, "--seed")) o->seed = (unsigned)number(v, 0, UINT_MAX, "--seed");
        else if (!strcmp(a, "--alloc")) {
            o->alloc_malloc = either(v, "mpi", "malloc", "--alloc");
        } else if (!strcmp(a, "--buffers")) {
            o->fresh = either(v, "grow", "fresh", "--buffers");
        } else if (!strcmp(a, "--order")) {
            o->shuffled = either(v, "ascending", "shuffled", "--order");
        } else if (!strcmp(a, "--comm")) {
            o->world = either(v, "split", "world", "--comm");
        } else if (!strcmp(a, "--iter-policy")) {
            o->budget = either(v, "imb", "budget", "--iter-policy");
        } else {
            usage("unknown option");
        }
    }
    if ((int)o->coll < 0 || o->nsizes == 0)
        usage("--collective and --sizes are required");
}

static int ascending(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* never outlive the launcher */
    if (getppid() == 1)
        return 1;
    struct options o;
    parse(argc, argv, &o);
    MPI_Init(&argc, &argv);
    struct bench b = {.comm = MPI_COMM_WORLD, .coll = o.coll, .alloc_malloc = o.alloc_malloc};
    if (!o.world) {
        int world_rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank, &b.comm);
    }
    MPI_Comm_rank(b.comm, &b.rank);
    MPI_Comm_size(b.comm, &b.np);
    MPI_Comm_set_errhandler(b.comm, MPI_ERRORS_ARE_FATAL);
    qsort(o.sizes, (size_t)o.nsizes, sizeof(long), ascending);
    if (o.shuffled) { /* the same seed on every rank: the same order */
        srand(o.seed);
        for (int i = o.nsizes - 1; i > 0; i--) {
            int j = rand() % (i + 1);
            long t = o.sizes[i]; o.sizes[i] = o.sizes[j]; o.sizes[j] = t;
        }
    }
    start_record(&b);
    int corrupt_on = corrupt_rank();
    long prev = o.iter;
    if (o.zero_size && measure(&b, &o, 0, &prev, 0, -1))
        goto done;
    for (int i = 0; i < o.nsizes; i++)
        if (measure(&b, &o, o.sizes[i], &prev, 1, corrupt_on))
            goto done; /* every rank saw the same wrong result: stop together, exit 0 */
    MPI_Barrier(b.comm);
    if (b.rank == 0 && poison_record()) { /* test only: a size record with a 400-digit count */
        printf("AUTOTUNE {\"kind\": \"size\", \"size\": %ld, \"iters\": 1", o.sizes[0]);
        for (int i = 0; i < 400; i++)
            putchar('0');
        printf(", \"t_max_us\": 1.0, \"t_min_us\": 1.0, \"t_avg_us\": 1.0}\n");
    }
    if (b.rank == 0) {
        printf("AUTOTUNE {\"kind\": \"done\", \"sizes\": %d}\n", o.nsizes);
        fflush(stdout);
    }
done:
    release(&b, &b.s_buf, &b.s_alloc);
    release(&b, &b.r_buf, &b.r_alloc);
    if (b.comm != MPI_COMM_WORLD)
        MPI_Comm_free(&b.comm);
    MPI_Finalize();
    return 0;
}
