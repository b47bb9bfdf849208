/* A direct-mapped table of plans guarded by one sequence counter per slot
 * (a seqlock): readers never block or write shared memory, so a hit costs a
 * hash and a copy; a writer that finds its slot busy simply skips the
 * insert (the next miss will try again). Every shared word is accessed
 * atomically, so the protocol is data-race free in C11 terms. Clearing
 * bumps a generation that every key carries, which invalidates all slots at
 * once without touching them. */
#include "analyzer/plancache.h"

#include <stdatomic.h>
#include <string.h>

enum { SLOTS = 2048 };
enum { KEY_WORDS = 7, PLAN_WORDS = (sizeof(vx_gemm_plan) + 7) / 8 };

typedef struct {
    _Atomic uint64_t seq; /* odd while being written */
    _Atomic uint64_t key[KEY_WORDS];
    _Atomic uint64_t plan[PLAN_WORDS];
} slot;

static slot g_slots[SLOTS];
static _Atomic uint64_t g_generation = 1;

/* The three leading dimensions in one word (a hit compares one more word,
 * not three): exact while each is below 2^21 elements, as every dense call
 * (all 0) and any lda up to 2 M is; beyond, a hash with the top bit set,
 * where two strides that collide share a plan (still a right result). */
static inline uint64_t ld_word(const vx_plan_key *k)
{
    const uint64_t a = (uint64_t)k->a_ld, b = (uint64_t)k->b_ld, c = (uint64_t)k->c_ld, lim = (uint64_t)1 << 21;
    if (a < lim && b < lim && c < lim)
        return a | (b << 21) | (c << 42);
    uint64_t h = a * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 31) ^ b) * 0xC2B2AE3D27D4EB4Full;
    h = (h ^ (h >> 29) ^ c) * 0x165667B19E3779F9ull;
    return (h ^ (h >> 32)) | ((uint64_t)1 << 63);
}

/* Every bit of the first five words is kept: items may carry a GEMM
 * shape's geometry (plan.c, gemm_key), all 63 bits of it. When a
 * convolution's geometry sat there too, shifted up 16 bits to make room
 * for the generation, its top bits were lost, and two NCHW convolutions of
 * one GEMM view (ResNet-50's 3x3 layers of a stage, stride 1 and 2) shared
 * a plan: the second ran the first's, 1.2x the time of its own (NOTES.md,
 * forty-second session). The generation has a word of its own; the
 * leading-dimension words share one (ld_word). */
static void pack_key(const vx_plan_key *k, uint64_t w[KEY_WORDS])
{
    w[0] = (uint64_t)k->m;
    w[1] = (uint64_t)k->n;
    w[2] = (uint64_t)k->k;
    w[3] = (uint64_t)k->flags;
    w[4] = (uint64_t)k->items;
    w[5] = ld_word(k);
    w[6] = atomic_load_explicit(&g_generation, memory_order_relaxed);
}

static slot *slot_of(const uint64_t w[KEY_WORDS])
{
    uint64_t h = w[0] * 0x9E3779B97F4A7C15ull;
    h ^= w[1] * 0xC2B2AE3D27D4EB4Full;
    h ^= w[2] * 0x165667B19E3779F9ull;
    h ^= w[3] * 0x27D4EB2F165667C5ull;
    h ^= w[4] * 0x94D049BB133111EBull;
    h ^= w[5] * 0xBF58476D1CE4E5B9ull;
    /* a multiply moves bits only upwards: fold the high half down before
     * the slot takes the low bits (keys apart only in ldc, which sits at
     * bit 42 of w[5], all fell in one slot without it) */
    h = (h ^ (h >> 32)) * 0xD6E8FEB86659FD93ull;
    return &g_slots[(h ^ (h >> 32)) % SLOTS];
}

/* A hit copies the slot word by word straight into *out: staging the
 * words in a local array and copying that out with 16-byte moves failed
 * store forwarding (~10 % of a small call's time on AMD Zen 1). */
_Static_assert(sizeof(vx_gemm_plan) % 8 == 0, "plans are copied in 8-byte words");

int vx_plan_cache_get(const vx_plan_key *key, vx_gemm_plan *out)
{
    uint64_t w[KEY_WORDS];
    pack_key(key, w);
    slot *s = slot_of(w);
    const uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
    /* One branch for the key (the loops unroll; a hit is the common case). */
    uint64_t differ = s1 & 1;
#pragma GCC unroll 8
    for (int i = 0; i < KEY_WORDS; i++)
        differ |= atomic_load_explicit(&s->key[i], memory_order_relaxed) ^ w[i];
    if (differ)
        return 0;
    /* On a torn read (seq moved) *out holds garbage and the caller, told
     * "miss", overwrites it. */
    unsigned char *dst = (unsigned char *)out;
#pragma GCC unroll 16
    for (int i = 0; i < PLAN_WORDS; i++) {
        const uint64_t word = atomic_load_explicit(&s->plan[i], memory_order_relaxed);
        memcpy(dst + 8 * i, &word, 8);
    }
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&s->seq, memory_order_relaxed) == s1;
}

void vx_plan_cache_put(const vx_plan_key *key, const vx_gemm_plan *pl)
{
    uint64_t w[KEY_WORDS], p[PLAN_WORDS] = { 0 };
    pack_key(key, w);
    memcpy(p, pl, sizeof *pl);
    slot *s = slot_of(w);
    uint64_t s0 = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if ((s0 & 1) || !atomic_compare_exchange_strong_explicit(&s->seq, &s0, s0 + 1, memory_order_acquire,
                                                             memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release);
    for (int i = 0; i < KEY_WORDS; i++)
        atomic_store_explicit(&s->key[i], w[i], memory_order_relaxed);
    for (int i = 0; i < PLAN_WORDS; i++)
        atomic_store_explicit(&s->plan[i], p[i], memory_order_relaxed);
    atomic_store_explicit(&s->seq, s0 + 2, memory_order_release);
}

void vx_plan_cache_clear(void)
{
    atomic_fetch_add_explicit(&g_generation, 1, memory_order_relaxed);
}

int vx_plan_cache_slots(void) { return SLOTS; }
