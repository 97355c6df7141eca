/* libFuzzer harness: differential fuzzing of the cache against the model in
 * tests/c/cache_model.h (the same model the randomized test in
 * tests/c/test_cache.c runs). The input is the program: its bytes pick up
 * to 300 operations (put and insert of f32 and f16 entries, put_stored,
 * lookup, lookup_partial, match, get, pin, unpin, remove, mark_clean,
 * mark_unstored, set_cap, set_stored_index, set_layout, clear) over tokens
 * from {0, 1, 2, 0xFFFFFFFF}, so prefixes collide all the time; after every
 * step everything observable is compared (see cache_model.h).
 *
 * CM_PATHS=1 in the environment prints, at exit, how often each path of
 * the program ran over the whole session. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../c/cache_model.h"
#include "fuzz.h"

static cm_run g_run;
static void fuzz_where(FILE *out) { fprintf(out, "fuzz_cache: "); }

typedef struct bytes {
    const uint8_t *p;
    size_t n, i;
} bytes;

static unsigned next_byte(void *ctx) {
    bytes *b = ctx;
    return b->i < b->n ? b->p[b->i++] : 0;
}
static int more_bytes(void *ctx) {
    const bytes *b = ctx;
    return b->i < b->n;
}

static const uint32_t kAlphabet[4] = {0, 1, 2, 0xffffffffu};

static void print_paths(void) {
    fprintf(stderr, "fuzz_cache paths:\n");
    cm_print_paths(stderr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int registered;
    bytes b = {data, size, 0};
    cm_input in = {next_byte, more_bytes, &b};
    cm_config cfg = {kAlphabet, 4, CM_MAX_TOKENS, 300, 0};
    if (!registered) {
        registered = 1;
        if (getenv("CM_PATHS")) atexit(print_paths);
    }
    if (!cm_run_program(&g_run, &in, &cfg)) FAIL("%s", g_run.err);
    return 0;
}
