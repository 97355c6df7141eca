/* The reference's insert (bench/baseline.c) on bench/bench_insert.mjs's
 * workload, driven over a pipe so that the two sides run back to back in
 * each repetition: for every line "rep" on stdin, an empty cache gets
 * N entries of L tokens (the first SHARED shared) with one K and one V
 * block of L floats each, copied from the caller's arrays (bl_entry_make,
 * as the public JS insert copies them), and one line goes out: the time
 * per entry in microseconds, a checksum of what the cache holds, and the
 * page faults the fill took (getrusage ru_minflt, over the timed part).
 *
 *   cc -O2 -Ibench bench/baseline.c bench/insert_baseline.c -o insert_baseline
 *   insert_baseline N L SHARED
 */
#define _POSIX_C_SOURCE 200809L
#include "baseline.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* The token sets of bench_insert.mjs (and bench_native.c): mix32 as there. */
static uint32_t mix32(uint32_t x) {
    x = (x ^ (x >> 16)) * 0x85ebca6bu;
    x = (x ^ (x >> 13)) * 0xc2b2ae35u;
    return x ^ (x >> 16);
}

static long minflt(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_minflt;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: insert_baseline N L SHARED\n");
        return 2;
    }
    size_t N = strtoul(argv[1], NULL, 10), L = strtoul(argv[2], NULL, 10), S = strtoul(argv[3], NULL, 10);
    uint32_t *toks = malloc(N * L * sizeof *toks);
    float *k = malloc(L * sizeof *k), *v = malloc(L * sizeof *v);
    if (!toks || !k || !v) return 1;
    for (size_t i = 0; i < N; i++) {
        uint32_t *t = toks + i * L;
        for (size_t j = 0; j < S; j++) t[j] = mix32((uint32_t)j + 1) % 32000;
        t[S] = 32000 + (uint32_t)i;
        for (size_t j = S + 1; j < L; j++) t[j] = mix32((uint32_t)i * 1000003u + (uint32_t)j) % 32000;
    }
    for (size_t j = 0; j < L; j++) k[j] = (float)j, v[j] = -(float)j;
    const float *kp[1] = {k}, *vp[1] = {v};
    size_t lens[1] = {L};
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        bl_cache c;
        bl_cache_init(&c, (size_t)1 << 40);
        long f0 = minflt();
        double t0 = now_us();
        for (size_t i = 0; i < N; i++) {
            bl_entry e;
            if (bl_entry_make(&e, toks + i * L, L, 1, kp, lens, vp, lens) || bl_insert(&c, &e)) return 1;
        }
        double us = (now_us() - t0) / (double)N;
        long faults = minflt() - f0;
        uint64_t sum = c.len;
        for (size_t i = 0; i < c.len; i++) sum += c.entries[i].tokens[S];
        bl_cache_drop(&c);
        printf("%.4f %llu %ld\n", us, (unsigned long long)sum, faults);
        fflush(stdout);
    }
    return 0;
}
