/* Tests of pages (rlxkv.h, Pages): a cache with paging on holds each
 * token's values once, however many entries share them; hits gather them
 * back exactly; eviction takes leaves first; removal hides what still
 * serves. Values here are a function of the token's whole prefix, as a
 * model's KV is, so a hit is right exactly when it gathers these. */
#include <stdlib.h>
#include <string.h>

#include "cache_check.h"
#include "check.h"
#include "page_values.h"
#include "cache_check.h"

static size_t held_bytes(const rlxkv_cache *c) {
    rlxkv_stats s;
    rlxkv_cache_stats(c, &s);
    return s.bytes;
}

static size_t n_pieces(rlxkv_cache *c, const uint32_t *q, size_t n) {
    rlxkv_hit h;
    if (rlxkv_cache_lookup(c, q, n, &h) != RLXKV_HIT) return 0;
    return rlxkv_hit_pieces(&h, NULL, 0);
}

/* A conversation: a 40-token system prompt, then `turns` turns of 8 tokens
 * of chat `chat`. */
static size_t conversation(uint32_t *t, int chat, int turns) {
    size_t n = 0;
    for (uint32_t i = 0; i < 40; i++) t[n++] = 1000 + i;
    for (int k = 0; k < turns; k++)
        for (uint32_t i = 0; i < 8; i++) t[n++] = (uint32_t)(chat * 100000 + k * 100 + (int)i);
    return n;
}

/* Three chats of four turns each over one system prompt: every turn's
 * whole conversation is put with all its values, as an app that has them
 * all would; the cache keeps each token's values once. */
static void chat_turns_hold_each_token_once(void) {
    for (int order = RLXKV_TOKEN_MAJOR; order <= RLXKV_HEAD_MAJOR; order++) {
        rlxkv_cache *c = paged_cache(1 << 24, order);
        uint32_t t[200];
        size_t n = conversation(t, 0, 0);
        CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, 0, order)), RLXKV_OK);
        CHECK_EQ(rlxkv_cache_pin(c, t, n), RLXKV_OK);
        for (int turn = 1; turn <= 4; turn++)
            for (int chat = 0; chat < 3; chat++) {
                n = conversation(t, chat, turn);
                CHECK_EQ(rlxkv_cache_held(c, t, n, RLXKV_F32, LAYERS, NULL), n - 8);
                CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, 0, order)), RLXKV_OK);
                CHECK(rlxkv_cache_check(c, NULL, NULL));
            }
        CHECK_EQ(held_bytes(c), (40 + 3 * 4 * 8) * TOKEN_BYTES);
        for (int chat = 0; chat < 3; chat++)
            for (int turn = 0; turn <= 4; turn++) {
                n = conversation(t, chat, turn);
                CHECK(hit_is_exact(c, t, n, n, order));
                CHECK_EQ(n_pieces(c, t, n), (size_t)turn + 1);
                /* a query that goes on past it, and one cut inside a turn */
                t[n] = 5;
                CHECK(hit_is_exact(c, t, n + 1, n, order));
                CHECK(hit_is_exact(c, t, n - 3, n - 3, order));
            }
        rlxkv_cache_free(c);
    }
}

/* An app that has only the new tokens' values asks how many the cache
 * holds and brings the rest; bringing fewer is refused, changing nothing,
 * and bringing more keeps only the new. */
static void a_put_brings_only_the_new_tokens(void) {
    rlxkv_cache *c = paged_cache(1 << 24, RLXKV_HEAD_MAJOR);
    uint32_t t[200];
    size_t n0 = conversation(t, 1, 1), n = conversation(t, 1, 2);
    CHECK_EQ(rlxkv_cache_held(c, t, n, RLXKV_F32, LAYERS, NULL), 0);
    CHECK_EQ(rlxkv_cache_put(c, page_of(t, n0, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_held(c, t, n, RLXKV_F32, LAYERS, NULL), n0);
    CHECK_EQ(rlxkv_cache_held(c, t, n, RLXKV_F16, LAYERS, NULL), 0); /* no f16 values held */
    CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, n0 + 1, RLXKV_HEAD_MAJOR)), RLXKV_ERR_NOTFOUND);
    CHECK(rlxkv_cache_get(c, t, n) == NULL);
    CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, n0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(held_bytes(c), n * TOKEN_BYTES);
    const rlxkv_entry *e = rlxkv_cache_get(c, t, n);
    CHECK_EQ(rlxkv_entry_start(e), n0);
    CHECK(rlxkv_entry_parent(e) == rlxkv_cache_get(c, t, n0));
    CHECK(hit_is_exact(c, t, n, n, RLXKV_HEAD_MAJOR));
    /* A third turn brought from token 10: tokens 10..n-1 are dropped. */
    size_t n3 = conversation(t, 1, 3);
    CHECK_EQ(rlxkv_cache_put(c, page_of(t, n3, 10, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(held_bytes(c), n3 * TOKEN_BYTES);
    CHECK(hit_is_exact(c, t, n3, n3, RLXKV_HEAD_MAJOR));
    /* The tokens of an entry: held says its own start (a put replaces them). */
    CHECK_EQ(rlxkv_cache_held(c, t, n, RLXKV_F32, LAYERS, NULL), n0);
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    rlxkv_cache_free(c);
}

/* The cap holds two conversations' worth: a third evicts the coldest one
 * from its newest turn back, never a turn another still uses. */
static void eviction_takes_leaves_first(void) {
    uint32_t t[200];
    size_t n = conversation(t, 0, 0);
    rlxkv_cache *c = paged_cache((40 + 2 * 3 * 8) * TOKEN_BYTES, RLXKV_HEAD_MAJOR);
    CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    for (int chat = 0; chat < 3; chat++)
        for (int turn = 1; turn <= 3; turn++) {
            n = conversation(t, chat, turn);
            CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
            CHECK(rlxkv_cache_check(c, NULL, NULL));
        }
    /* Chat 0 went, newest turn first; its system prompt stays for the others. */
    for (int turn = 1; turn <= 3; turn++) {
        n = conversation(t, 0, turn);
        CHECK(rlxkv_cache_get(c, t, n) == NULL);
        n = conversation(t, 2, turn);
        CHECK(hit_is_exact(c, t, n, n, RLXKV_HEAD_MAJOR));
    }
    n = conversation(t, 0, 0);
    CHECK(rlxkv_cache_get(c, t, n) != NULL);
    CHECK_EQ(held_bytes(c), (40 + 2 * 3 * 8) * TOKEN_BYTES);
    /* Pinning chat 2's last turn keeps its whole path through a cap of 0. */
    n = conversation(t, 2, 3);
    CHECK_EQ(rlxkv_cache_pin(c, t, n), RLXKV_OK);
    rlxkv_cache_set_cap(c, 0);
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    CHECK(hit_is_exact(c, t, n, n, RLXKV_HEAD_MAJOR));
    CHECK_EQ(held_bytes(c), n * TOKEN_BYTES);
    rlxkv_cache_free(c);
}

/* Removing the system prompt hides it: its tokens no longer hit as an
 * entry, the chats over it still do, and it goes with its last user. */
static void removing_a_parent_hides_it_until_its_users_go(void) {
    rlxkv_cache *c = paged_cache(1 << 24, RLXKV_HEAD_MAJOR);
    uint32_t s[200], a[200], b[200];
    size_t ns = conversation(s, 0, 0), na = conversation(a, 1, 1), nb = conversation(b, 2, 1);
    CHECK_EQ(rlxkv_cache_put(c, page_of(s, ns, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, page_of(a, na, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, page_of(b, nb, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_remove(c, s, ns), RLXKV_OK);
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    CHECK(rlxkv_cache_get(c, s, ns) == NULL);
    CHECK_EQ(rlxkv_cache_remove(c, s, ns), RLXKV_ERR_NOTFOUND);
    rlxkv_stats st;
    rlxkv_cache_stats(c, &st);
    CHECK_EQ(st.entries, 2);
    CHECK_EQ(st.bytes, (ns + 16) * TOKEN_BYTES);
    CHECK(hit_is_exact(c, a, na, na, RLXKV_HEAD_MAJOR));
    CHECK(hit_is_exact(c, s, ns, ns, RLXKV_HEAD_MAJOR)); /* a partial hit, cut from a chat */
    CHECK_EQ(rlxkv_cache_remove(c, a, na), RLXKV_OK);
    CHECK(hit_is_exact(c, b, nb, nb, RLXKV_HEAD_MAJOR));
    CHECK_EQ(rlxkv_cache_remove(c, b, nb), RLXKV_OK);
    rlxkv_cache_stats(c, &st);
    CHECK_EQ(st.entries, 0);
    CHECK_EQ(st.bytes, 0);
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    /* A hidden entry's tokens put again bring it back, users and all. */
    CHECK_EQ(rlxkv_cache_put(c, page_of(s, ns, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, page_of(a, na, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_remove(c, s, ns), RLXKV_OK);
    /* held agrees with put about a hidden entry (found by fuzz_pages): its put replaces it */
    CHECK_EQ(rlxkv_cache_held(c, s, ns, RLXKV_F32, LAYERS, NULL), 0);
    CHECK_EQ(rlxkv_cache_put(c, page_of(s, ns, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK(rlxkv_cache_get(c, s, ns) != NULL);
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    CHECK(hit_is_exact(c, a, na, na, RLXKV_HEAD_MAJOR));
    rlxkv_cache_free(c);
}

/* An edited message: the new prompt leaves a turn partway, takes the
 * tokens before the edit from it (cut), and brings the rest. */
static void an_edited_prompt_takes_what_it_shares_from_a_cut_parent(void) {
    rlxkv_cache *c = paged_cache(1 << 24, RLXKV_TOKEN_MAJOR);
    uint32_t a[200], b[200];
    size_t na = conversation(a, 3, 2), nb = conversation(b, 3, 2);
    b[na - 5] = 424242; /* edits the last turn, 3 tokens into it */
    CHECK_EQ(rlxkv_cache_put(c, page_of(a, na, 0, RLXKV_TOKEN_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_held(c, b, nb, RLXKV_F32, LAYERS, NULL), na - 5);
    CHECK_EQ(rlxkv_cache_put(c, page_of(b, nb, 0, RLXKV_TOKEN_MAJOR)), RLXKV_OK);
    CHECK_EQ(held_bytes(c), (na + 5) * TOKEN_BYTES);
    CHECK(hit_is_exact(c, b, nb, nb, RLXKV_TOKEN_MAJOR));
    CHECK(hit_is_exact(c, a, na, na, RLXKV_TOKEN_MAJOR));
    /* The parent is a leaf no longer: evicting takes b first. */
    rlxkv_cache_set_cap(c, na * TOKEN_BYTES);
    CHECK(rlxkv_cache_get(c, b, nb) == NULL);
    CHECK(hit_is_exact(c, a, na, na, RLXKV_TOKEN_MAJOR));
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    rlxkv_cache_free(c);
}

/* Replacing an entry that serves others keeps them: they use the new
 * values of its tokens. */
static void replacing_a_parent_keeps_its_users(void) {
    rlxkv_cache *c = paged_cache(1 << 24, RLXKV_HEAD_MAJOR);
    uint32_t s[200], a[200];
    size_t ns = conversation(s, 0, 0), na = conversation(a, 4, 2);
    CHECK_EQ(rlxkv_cache_put(c, page_of(s, ns, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, page_of(a, na, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK_EQ(rlxkv_cache_put(c, page_of(s, ns, 0, RLXKV_HEAD_MAJOR)), RLXKV_OK);
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    CHECK(rlxkv_entry_parent(rlxkv_cache_get(c, a, na)) == rlxkv_cache_get(c, s, ns));
    CHECK(hit_is_exact(c, a, na, na, RLXKV_HEAD_MAJOR));
    CHECK_EQ(held_bytes(c), na * TOKEN_BYTES);
    rlxkv_cache_free(c);
}

/* Without a layout, row-major entries of the same row lengths share their
 * prefix; entries of other row lengths, or not row-major, stay whole. */
static void without_a_layout_only_like_rows_share(void) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 24, 7);
    CHECK_EQ(rlxkv_cache_set_paging(c, 1), RLXKV_OK);
    uint32_t t[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t two[2] = {8, 8}, three[2] = {12, 12}, odd[2] = {5, 0};
    rlxkv_entry *e = rlxkv_entry_new(4, 1, two, RLXKV_F32, NULL);
    memcpy(rlxkv_entry_tokens_mut(e), t, 4 * sizeof *t);
    CHECK_EQ(rlxkv_cache_put(c, e), RLXKV_OK);
    size_t rows2[2] = {2, 2}, rows3[2] = {3, 3};
    CHECK_EQ(rlxkv_cache_held(c, t, 6, RLXKV_F32, 1, rows2), 4);
    CHECK_EQ(rlxkv_cache_held(c, t, 6, RLXKV_F32, 1, rows3), 0);
    CHECK_EQ(rlxkv_cache_held(c, t, 6, RLXKV_F32, 1, NULL), 0);
    e = rlxkv_entry_new(4, 1, three, RLXKV_F32, NULL); /* same tokens, other rows: replaces */
    memcpy(rlxkv_entry_tokens_mut(e), t, 4 * sizeof *t);
    CHECK_EQ(rlxkv_cache_put(c, e), RLXKV_OK);
    size_t six[2] = {18, 18};
    e = rlxkv_entry_new(6, 1, six, RLXKV_F32, NULL);
    memcpy(rlxkv_entry_tokens_mut(e), t, 6 * sizeof *t);
    CHECK_EQ(rlxkv_cache_put(c, e), RLXKV_OK);
    CHECK_EQ(rlxkv_entry_start(rlxkv_cache_get(c, t, 6)), 4);
    e = rlxkv_entry_new(8, 1, odd, RLXKV_F32, NULL); /* not row-major: whole */
    memcpy(rlxkv_entry_tokens_mut(e), t, 8 * sizeof *t);
    CHECK_EQ(rlxkv_cache_put(c, e), RLXKV_OK);
    CHECK_EQ(rlxkv_entry_start(rlxkv_cache_get(c, t, 8)), 0);
    CHECK(rlxkv_cache_check(c, NULL, NULL));
    CHECK_EQ(rlxkv_cache_set_paging(c, 0), RLXKV_ERR_INVALID); /* not empty */
    rlxkv_cache_free(c);
}

/* Random chats, edits, removals, pins and caps (pages_program): after
 * every step the tree, lists and chains are consistent, and every lookup
 * gathers exact values. */
static uint64_t lcg = 0x1234567u;
static uint32_t lcg_next(void *ctx) {
    (void)ctx;
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg >> 33);
}

static void randomized_chats_stay_exact(void) {
    for (int round = 0; round < 40; round++) {
        const char *why = pages_program(lcg_next, NULL, 300);
        if (why) fprintf(stderr, "round %d: %s\n", round, why);
        CHECK(why == NULL);
    }
}

/* A cap that holds a conversation's system prompt, or its next turn, but
 * not both: the turn cannot hang below the prompt (eviction, leaves first,
 * would take the turn at once). held says so (SIZE_MAX); a put of the whole
 * turn is filed whole and the prompt goes, as the reference keeps its
 * newest entry; a put of the turn's own tokens only is NOSPACE, nothing
 * changed. */
static void a_chain_that_cannot_stay_is_not_used(void) {
    for (int order = RLXKV_TOKEN_MAJOR; order <= RLXKV_HEAD_MAJOR; order++) {
        rlxkv_cache *c = paged_cache(44 * TOKEN_BYTES, order);
        uint32_t t[200];
        size_t n0 = conversation(t, 0, 0), n = conversation(t, 0, 1);
        CHECK_EQ(rlxkv_cache_put(c, page_of(t, n0, 0, order)), RLXKV_OK);
        CHECK_EQ(rlxkv_cache_held(c, t, n, RLXKV_F32, LAYERS, NULL), SIZE_MAX);
        CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, n0, order)), RLXKV_ERR_NOSPACE);
        CHECK(hit_is_exact(c, t, n0, n0, order));
        CHECK_EQ(rlxkv_cache_put(c, page_of(t, n, 0, order)), RLXKV_OK);
        CHECK(hit_is_exact(c, t, n, n, order));
        CHECK_EQ(held_bytes(c), n * TOKEN_BYTES); /* alone, over the cap */
        CHECK_EQ(n_pieces(c, t, n), 1);
        CHECK(rlxkv_cache_check(c, NULL, NULL));
        rlxkv_cache_free(c);
    }
}

int main(void) {
    RUN(chat_turns_hold_each_token_once);
    RUN(a_put_brings_only_the_new_tokens);
    RUN(eviction_takes_leaves_first);
    RUN(removing_a_parent_hides_it_until_its_users_go);
    RUN(an_edited_prompt_takes_what_it_shares_from_a_cut_parent);
    RUN(replacing_a_parent_keeps_its_users);
    RUN(without_a_layout_only_like_rows_share);
    RUN(randomized_chats_stay_exact);
    RUN(a_chain_that_cannot_stay_is_not_used);
    return check_report();
}
