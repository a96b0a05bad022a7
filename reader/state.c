/*
 * Resumption state: 128 bytes, little-endian, no pointers.
 *
 *   0  "PSRS"         magic
 *   4  u32 version    1
 *   8  u64 seed
 *  16  u64 epoch
 *  24  u64 position   the next batch to deliver (0-based in the epoch)
 *  32  u64 plan_hash  every plan input but seed and epoch, manifest included
 *  40  u64 set_hash   XXH64 of manifest.json
 *  48  u32 rank
 *  52  u32 world_size
 *  56  u32 batch_size
 *  60  u32 pad_multiple
 *  64  u64 max_tokens
 *  72  u32 shuffle_window
 *  76  u32 sort_pool
 *  80  u8  shuffle
 *  81  u8  drop_last
 *  82  u8  skip_long
 *  83  zero
 *  84  u32 pack       (0: unpacked, and in states written before packing)
 *  88  zero to 119    reserved
 * 120  u64 checksum   XXH64 of bytes 0..119
 *
 * The options are stored (beside their hash) so that a refused resume can
 * say which one differs. The blob is untrusted on the way back in (it may
 * have crossed a network or a file system): every field is checked before
 * it is used.
 */
#include "reader/reader_internal.h"

#include <stddef.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define STATE_MAGIC "PSRS"
#define STATE_VERSION 1u

/* The fields after the version, at the offsets the layout above gives:
 * each is stored as wide as its rd_state member (8, 4 or 1 bytes). One
 * table for both ways, so that encode and decode cannot disagree. */
#define FIELD(name, at) {offsetof(rd_state, name), sizeof(((rd_state *)0)->name), at}
static const struct {
    size_t off, width, at;
} FIELDS[] = {
    FIELD(seed, 8),
    FIELD(epoch, 16),
    FIELD(position, 24),
    FIELD(plan_hash, 32),
    FIELD(set_hash, 40),
    FIELD(rank, 48),
    FIELD(world_size, 52),
    FIELD(batch_size, 56),
    FIELD(pad_multiple, 60),
    FIELD(max_tokens, 64),
    FIELD(shuffle_window, 72),
    FIELD(sort_pool, 76),
    FIELD(shuffle, 80),
    FIELD(drop_last, 81),
    FIELD(skip_long, 82),
    FIELD(pack, 84),
};
#undef FIELD
#define N_FIELDS (sizeof FIELDS / sizeof FIELDS[0])

/* Field i of s into the blob b, little-endian. */
static void put_field(unsigned char *b, const rd_state *s, size_t i)
{
    const char *m = (const char *)s + FIELDS[i].off;
    unsigned char *at = b + FIELDS[i].at;
    uint64_t v64;
    uint32_t v32;
    switch (FIELDS[i].width) {
    case 8: memcpy(&v64, m, 8); ps_put_le64(at, v64); break;
    case 4: memcpy(&v32, m, 4); ps_put_le32(at, v32); break;
    default: *at = *(const unsigned char *)m;
    }
}

/* Field i of the blob b into s. */
static void get_field(const unsigned char *b, rd_state *s, size_t i)
{
    char *m = (char *)s + FIELDS[i].off;
    const unsigned char *at = b + FIELDS[i].at;
    uint64_t v64;
    uint32_t v32;
    switch (FIELDS[i].width) {
    case 8: v64 = ps_get_le64(at); memcpy(m, &v64, 8); break;
    case 4: v32 = ps_get_le32(at); memcpy(m, &v32, 4); break;
    default: *(unsigned char *)m = *at;
    }
}

/* What the reader's state is now: its options, its position and hashes. */
static rd_state state_of(const ps_reader *r)
{
    const ps_plan_options *o = &r->popt;
    return (rd_state){
        .seed = o->seed,
        .epoch = o->epoch,
        .position = r->next_deliver,
        .plan_hash = ps_plan_options_hash(o, r->manifest_hash),
        .set_hash = r->manifest_hash,
        .rank = o->rank,
        .world_size = o->world_size,
        .batch_size = o->batch_size,
        .pad_multiple = o->pad_multiple,
        .max_tokens = o->max_tokens,
        .shuffle_window = o->shuffle_window,
        .sort_pool = o->sort_pool,
        .shuffle = o->shuffle != 0,
        .drop_last = o->drop_last != 0,
        .skip_long = o->skip_long != 0,
        .pack = o->pack,
    };
}

void rd_state_encode(const ps_reader *r, ps_reader_state *out)
{
    unsigned char *b = out->bytes;
    rd_state s = state_of(r);
    memset(b, 0, PS_READER_STATE_BYTES);
    memcpy(b, STATE_MAGIC, 4);
    ps_put_le32(b + 4, STATE_VERSION);
    for (size_t i = 0; i < N_FIELDS; i++)
        put_field(b, &s, i);
    ps_put_le64(b + 120, XXH64(b, 120, 0));
}

int rd_state_decode(const void *bytes, size_t len, rd_state *out, ps_error *err)
{
    const unsigned char *b = bytes;
    if (!bytes || len != PS_READER_STATE_BYTES)
        return ps_error_set(err, PS_EFORMAT, "reader state: %zu bytes, expected %d", len,
                            PS_READER_STATE_BYTES);
    if (memcmp(b, STATE_MAGIC, 4))
        return ps_error_set(err, PS_EFORMAT, "reader state: not a pairshard reader state "
                                             "(bad magic)");
    uint32_t version = ps_get_le32(b + 4);
    if (version > STATE_VERSION)
        return ps_error_set(err, PS_EVERSION,
                            "reader state: version %u is newer than this pairshard supports "
                            "(%u)",
                            version, STATE_VERSION);
    if (version < 1)
        return ps_error_set(err, PS_EFORMAT, "reader state: version 0 is not valid");
    if (ps_get_le64(b + 120) != XXH64(b, 120, 0))
        return ps_error_set(err, PS_EFORMAT, "reader state: checksum mismatch (damaged)");
    rd_state s;
    memset(&s, 0, sizeof s);
    for (size_t i = 0; i < N_FIELDS; i++)
        get_field(b, &s, i);
    if (s.world_size < 1 || s.rank >= s.world_size)
        return ps_error_set(err, PS_EFORMAT, "reader state: rank %u of world size %u", s.rank,
                            s.world_size);
    if (s.shuffle > 1 || s.drop_last > 1 || s.skip_long > 1)
        return ps_error_set(err, PS_EFORMAT, "reader state: flags out of range");
    for (int i = 83; i < 120; i++)
        if (b[i] && (i < 84 || i >= 88))
            return ps_error_set(err, PS_EFORMAT, "reader state: reserved bytes are not zero");
    if (out)
        *out = s;
    return PS_OK;
}

int ps_reader_state_check(const void *bytes, size_t len, ps_error *err)
{
    return rd_state_decode(bytes, len, NULL, err);
}

int ps_reader_get_state(const ps_reader *r, ps_reader_state *out)
{
    pthread_mutex_lock((pthread_mutex_t *)&r->mu);
    rd_state_encode(r, out);
    pthread_mutex_unlock((pthread_mutex_t *)&r->mu);
    return PS_OK;
}
