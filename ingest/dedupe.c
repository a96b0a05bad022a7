/*
 * Exact-duplicate detection on the cleaned (question, sql) pair: an
 * open-addressing set of XXH3-128 hashes (collision odds ~n^2 / 2^129,
 * i.e. none for any real corpus), 32 bytes a record, plus the kept
 * record's id so a duplicate can name what it duplicates.
 *
 * A default id ("<input>:<line>") is kept as its input's prefix number and
 * the line, and spelled out only when a duplicate asks for it: copying
 * every kept id was a tenth of the in-order commit, most of it the cache
 * miss of reading a string another thread wrote.
 *
 * The ids live in blocks that never move (an id handed out stays valid
 * until the table is freed), each 2 MiB block aligned and asked for a
 * huge page: the in-order commit copies every kept id, and a growing
 * buffer's reallocations and 4 KiB page faults cost it more than the
 * lookups (measured: 60% of the inserts' time).
 */
#include "ingest/ingest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

typedef struct slot {
    XXH128_hash_t h;   /* {0,0} marks an empty slot (a real 0 hash is bumped) */
    union {
        const char *id; /* prefix 0: the kept record's id, in an id block */
        uint64_t pos;   /* else: the number after the prefix */
    } u;
    uint32_t label_hash;
    uint32_t prefix;   /* 0, or a prefix's number + 1 */
} slot;

/* A block of ids: this head, then the NUL-terminated ids. */
typedef struct id_block {
    struct id_block *next;
    size_t bytes, used; /* the mapping's size; bytes in use, the head's included */
} id_block;

struct ps_dedupe {
    slot *slots;
    size_t cap, used;
    id_block *ids; /* the block being filled, the older ones behind it */
    struct prefix {
        const char *s; /* ps_dedupe_add_prefix's, copied into an id block */
        size_t len;
    } *prefix;
    size_t n_prefix;
};

/* Tables of 2 MiB and more are mapped and asked for huge pages: a table
 * filled at random touches every page, and a 4 KiB page fault each 128
 * slots cost more than the inserts (a hint; without THP it is ordinary
 * zeroed memory). */
#define HUGE_BYTES (2u << 20)

static slot *table_alloc(size_t n)
{
    size_t bytes = n * sizeof(slot);
    if (bytes < HUGE_BYTES)
        return calloc(n, sizeof(slot));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    ps_mem_hint_huge(p, bytes);
    return p;
}

static void table_free(slot *s, size_t n)
{
    if (n * sizeof(slot) < HUGE_BYTES)
        free(s);
    else if (s)
        munmap(s, n * sizeof(slot));
}

#define ID_BLOCK HUGE_BYTES
#define ID_FIRST ((size_t)64 << 10)

/* Maps `bytes` (a multiple of ID_BLOCK) aligned to ID_BLOCK, so a huge
 * page can back it: over-map by one block, unmap the ends. */
static void *map_aligned(size_t bytes)
{
    char *p = mmap(NULL, bytes + ID_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    size_t head = (ID_BLOCK - (uintptr_t)p % ID_BLOCK) % ID_BLOCK;
    if (head)
        munmap(p, head);
    if (ID_BLOCK - head)
        munmap(p + head + bytes, ID_BLOCK - head);
    ps_mem_hint_huge(p + head, bytes);
    return p + head;
}

/* Room for n bytes and a NUL in the current block, or a new one. */
static char *ids_room(ps_dedupe *d, size_t n)
{
    id_block *b = d->ids;
    if (!b || b->bytes - b->used < n + 1) {
        /* the first block small (most tables are), then huge-page sized */
        size_t need = sizeof *b + n + 1, bytes = d->ids ? ID_BLOCK : ID_FIRST;
        if (need < n)
            return NULL;
        if (need > bytes) /* an id over a block: a block of its own */
            bytes = (need + ID_BLOCK - 1) / ID_BLOCK * ID_BLOCK;
        b = bytes == ID_FIRST ? mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                              : map_aligned(bytes);
        if (!b || b == MAP_FAILED)
            return NULL;
        b->next = d->ids;
        b->bytes = bytes;
        b->used = sizeof *b;
        d->ids = b;
    }
    char *at = (char *)b + b->used;
    at[n] = '\0';
    b->used += n + 1;
    return at;
}

/* A copy of id (n bytes and a NUL) in an id block. */
static const char *ids_put(ps_dedupe *d, const char *id, size_t n)
{
    char *at = ids_room(d, n);
    if (at)
        memcpy(at, id, n);
    return at;
}

/* Prefix `no` and pos in decimal, spelled into an id block. */
static const char *ids_put_pos(ps_dedupe *d, uint32_t no, uint64_t pos)
{
    char digits[20];
    size_t nd = 0;
    do
        digits[sizeof digits - ++nd] = (char)('0' + pos % 10);
    while ((pos /= 10) != 0);
    size_t plen = d->prefix[no].len;
    char *at = ids_room(d, plen + nd);
    if (at) {
        memcpy(at, d->prefix[no].s, plen);
        memcpy(at + plen, digits + sizeof digits - nd, nd);
    }
    return at;
}

int ps_dedupe_add_prefix(ps_dedupe *d, const char *prefix, size_t len, uint32_t *no)
{
    if (d->n_prefix >= UINT32_MAX - 1)
        return PS_ELIMIT;
    struct prefix *np = realloc(d->prefix, (d->n_prefix + 1) * sizeof *np);
    if (!np)
        return PS_ENOMEM;
    d->prefix = np;
    const char *copy = ids_put(d, prefix, len);
    if (!copy)
        return PS_ENOMEM;
    d->prefix[d->n_prefix] = (struct prefix){copy, len};
    *no = (uint32_t)d->n_prefix++;
    return 0;
}

int ps_dedupe_create(ps_dedupe **out)
{
    ps_dedupe *d = calloc(1, sizeof *d);
    if (!d)
        return PS_ENOMEM;
    d->cap = 1024;
    d->slots = table_alloc(d->cap);
    if (!d->slots) {
        free(d);
        return PS_ENOMEM;
    }
    *out = d;
    return 0;
}

void ps_dedupe_free(ps_dedupe *d)
{
    if (!d)
        return;
    table_free(d->slots, d->cap);
    for (id_block *b = d->ids, *next; b; b = next) {
        next = b->next;
        munmap(b, b->bytes);
    }
    free(d->prefix);
    free(d);
}

static bool empty(const slot *s) { return s->h.low64 == 0 && s->h.high64 == 0; }

static slot *find(slot *slots, size_t cap, XXH128_hash_t h)
{
    size_t i = (size_t)h.low64 & (cap - 1);
    while (!empty(&slots[i]) && !XXH128_isEqual(slots[i].h, h))
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int rehash(ps_dedupe *d, size_t ncap)
{
    slot *ns = table_alloc(ncap);
    if (!ns)
        return PS_ENOMEM;
    for (size_t i = 0; i < d->cap; i++)
        if (!empty(&d->slots[i]))
            *find(ns, ncap, d->slots[i].h) = d->slots[i];
    table_free(d->slots, d->cap);
    d->slots = ns;
    d->cap = ncap;
    return 0;
}

static bool fits(size_t n, size_t cap) { return (n + 1) * 4 <= cap * 3; }

int ps_dedupe_reserve(ps_dedupe *d, size_t n)
{
    size_t cap = d->cap;
    while (!fits(n, cap) && cap <= SIZE_MAX / 4 / sizeof(slot))
        cap *= 2;
    return cap == d->cap ? 0 : rehash(d, cap);
}

size_t ps_dedupe_count(const ps_dedupe *d) { return d->used; }

void ps_dedupe_prefetch(const ps_dedupe *d, ps_pair_hash h)
{
    __builtin_prefetch(&d->slots[(size_t)h.low & (d->cap - 1)]);
}

ps_pair_hash ps_dedupe_hash(const char *q, size_t qn, const char *s, size_t sn)
{
    /* Length-prefixed, so ("ab","c") and ("a","bc") differ. */
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    uint64_t qlen = qn;
    XXH3_128bits_update(&st, &qlen, sizeof qlen);
    XXH3_128bits_update(&st, q, qn);
    XXH3_128bits_update(&st, s, sn);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    if (h.low64 == 0 && h.high64 == 0)
        h.low64 = 1;
    ps_pair_hash out = {h.low64, h.high64};
    return out;
}

/* Inserts h with the id `id` (id_len bytes) or, with prefix > 0, the id
 * spelled by prefix - 1 and pos. */
static int insert(ps_dedupe *d, ps_pair_hash ph, const char *id, size_t id_len, uint32_t prefix,
                  uint64_t pos, uint32_t label_hash, const char **first_id, bool *label_conflict)
{
    XXH128_hash_t h = {ph.low, ph.high};
    if (!fits(d->used, d->cap) && rehash(d, d->cap * 2))
        return PS_ENOMEM;
    slot *sl = find(d->slots, d->cap, h);
    if (!empty(sl)) {
        if (sl->prefix) { /* spelled once, then kept as a string */
            const char *s = ids_put_pos(d, sl->prefix - 1, sl->u.pos);
            if (!s)
                return PS_ENOMEM;
            sl->u.id = s;
            sl->prefix = 0;
        }
        *first_id = sl->u.id;
        *label_conflict = sl->label_hash != label_hash;
        return 1;
    }
    if (prefix) {
        sl->u.pos = pos;
    } else if (!(sl->u.id = ids_put(d, id, id_len))) {
        return PS_ENOMEM;
    }
    sl->h = h;
    sl->prefix = prefix;
    sl->label_hash = label_hash;
    d->used++;
    return 0;
}

int ps_dedupe_insert_hash(ps_dedupe *d, ps_pair_hash ph, const char *id, size_t id_len,
                          uint32_t label_hash, const char **first_id, bool *label_conflict)
{
    return insert(d, ph, id, id_len, 0, 0, label_hash, first_id, label_conflict);
}

int ps_dedupe_insert_pos(ps_dedupe *d, ps_pair_hash ph, uint32_t prefix, uint64_t pos,
                         uint32_t label_hash, const char **first_id, bool *label_conflict)
{
    if (prefix >= d->n_prefix)
        return PS_EINVAL;
    return insert(d, ph, NULL, 0, prefix + 1, pos, label_hash, first_id, label_conflict);
}
