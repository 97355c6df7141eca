/* Shared by the libFuzzer harnesses: FAIL prints where the harness was (its
 * own fuzz_where) and the message, then aborts so libFuzzer keeps the input. */
#ifndef RLXKV_FUZZ_H
#define RLXKV_FUZZ_H
#include <stdio.h>
#include <stdlib.h>

static void fuzz_where(FILE *out); /* each harness defines it */

#define FAIL(...)                         \
    do {                                  \
        fuzz_where(stderr);               \
        fprintf(stderr, __VA_ARGS__);     \
        fputc('\n', stderr);              \
        abort();                          \
    } while (0)
#define REQUIRE(cond)                                       \
    do {                                                    \
        if (!(cond)) FAIL("line %d: %s", __LINE__, #cond); \
    } while (0)
#endif
