/* A minimal test harness: CHECK records a failure and goes on; each test
 * binary prints "N passed, N failed" and exits non-zero on any failure. */
#ifndef RLXKV_CHECK_H
#define RLXKV_CHECK_H
#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (cond) check_passed++;                                            \
        else {                                                               \
            check_failed++;                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
        }                                                                    \
    } while (0)

#define CHECK_EQ(a, b) CHECK((a) == (b))

#define RUN(test)                                   \
    do {                                            \
        int before = check_failed;                  \
        test();                                     \
        printf("%s %s\n", before == check_failed ? "ok  " : "FAIL", #test); \
    } while (0)

static int check_report(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}
#endif
