/* libFuzzer harness: pages (rlxkv.h, Pages). The input picks a program of
 * up to 300 operations on a paging cache (tests/c/page_values.h,
 * pages_program): conversations that extend and fork over a shared head,
 * put whole or from what the cache holds, removals that hide parents,
 * pins, caps, clears, lookups. After every step the cache must be
 * consistent (tree, lists, chains, totals) and every hit must gather
 * exactly the values put. */
#include <stdint.h>
#include <stdio.h>

#include "../c/page_values.h"
#include "fuzz.h"

static void fuzz_where(FILE *out) { fprintf(out, "fuzz_pages: "); }

typedef struct bytes {
    const uint8_t *p;
    size_t n, i;
} bytes;

/* Four bytes at a time, zeros past the end. */
static uint32_t next_word(void *ctx) {
    bytes *b = ctx;
    uint32_t w = 0;
    for (int k = 0; k < 4; k++) w = w << 8 | (b->i < b->n ? b->p[b->i++] : 0);
    return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes b = {data, size, 0};
    const char *why = pages_program(next_word, &b, size / 8 < 300 ? (int)(size / 8) : 300);
    if (why) FAIL("%s", why);
    return 0;
}
