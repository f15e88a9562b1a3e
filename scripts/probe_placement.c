/* How fast do two CPUs of this machine pass a cache line, and does that change over time?
 *
 * Two processes, pinned to CPUs 0 and 1, bounce a counter through one shared cache line (no MPI,
 * no syscalls in the loop). Every SAMPLE_MS they print the one-way latency of the last batch.
 * On bare metal the value is constant. On the project's 2-core VM it jumps between two or three
 * values (0.05 and 0.26 us one day, 0.11 and 0.37 us the next) and holds one for seconds to
 * minutes (docs/evidence/kernel-fidelity.md): the host places the guest's vCPUs on cores that share a cache
 * or do not, and every message size of a 2-rank collective moves with it.
 *
 *   gcc -O2 -o /tmp/probe_placement scripts/probe_placement.c
 *   /tmp/probe_placement 60        # seconds; prints "t_s one_way_us" lines, then a "#" summary
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 2000         /* round trips per sample */
#define SAMPLE_MS 100      /* one sample printed every ~100 ms */
#define MAX_SAMPLES 100000
#define SLOW_RATIO 1.5     /* a sample this much above the 5th percentile is in the slow state */

struct line { volatile int64_t value; char pad[56]; };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(2);
    }
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 30.0;
    if (!(seconds > 0) || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "usage: probe_placement SECONDS (needs 2 CPUs)\n");
        return 2;
    }
    struct line *shared = mmap(NULL, 2 * sizeof(struct line), PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    shared[0].value = shared[1].value = 0;
    pid_t child = fork();
    if (child == 0) { /* the echo: copies ping to pong forever */
        pin(1);
        int64_t seen = 0;
        for (;;) {
            while (shared[0].value == seen) {}
            seen = shared[0].value;
            shared[1].value = seen;
        }
    }
    pin(0);
    static double samples[MAX_SAMPLES];
    int n = 0;
    int64_t count = 0;
    double start = now_s(), next = start;
    while (n < MAX_SAMPLES && now_s() - start < seconds) {
        double t0 = now_s();
        for (int i = 0; i < BATCH; i++) {
            shared[0].value = ++count;
            while (shared[1].value != count) {}
        }
        double us = (now_s() - t0) / BATCH / 2 * 1e6; /* one way */
        samples[n++] = us;
        printf("%.3f %.4f\n", t0 - start, us);
        next += SAMPLE_MS * 1e-3;
        while (now_s() < next) {} /* keep both CPUs busy between samples, as a benchmark does */
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    if (n == 0) return 1;
    double *sorted = malloc(n * sizeof *sorted);
    for (int i = 0; i < n; i++) sorted[i] = samples[i];
    qsort(sorted, n, sizeof *sorted, by_value);
    double fast = sorted[n / 20] * SLOW_RATIO; /* slow: 1.5x the 5th percentile or more */
    int slow = 0, run = 0, longest[2] = {0, 0}, changes = 0;
    for (int i = 0; i < n; i++) {
        int s = samples[i] >= fast;
        slow += s;
        run = (i > 0 && (samples[i - 1] >= fast) == s) ? run + 1 : 1;
        if (i > 0 && (samples[i - 1] >= fast) != s) changes++;
        if (run > longest[s]) longest[s] = run;
    }
    printf("# %d samples over %.0f s, one-way us: p5 %.3f p25 %.3f p50 %.3f p75 %.3f p95 %.3f; "
           "slow (>= %.1fx p5) %.0f%% of samples; %d changes of state; longest run fast %.1f s, "
           "slow %.1f s\n", n, seconds, sorted[n / 20], sorted[n / 4], sorted[n / 2],
           sorted[3 * n / 4], sorted[19 * n / 20], SLOW_RATIO, 100.0 * slow / n, changes,
           longest[0] * SAMPLE_MS / 1000.0, longest[1] * SAMPLE_MS / 1000.0);
    free(sorted);
    return 0;
}
