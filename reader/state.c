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

#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define STATE_MAGIC "PSRS"
#define STATE_VERSION 1u

void rd_state_encode(const ps_reader *r, ps_reader_state *out)
{
    unsigned char *b = out->bytes;
    memset(b, 0, PS_READER_STATE_BYTES);
    memcpy(b, STATE_MAGIC, 4);
    ps_put_le32(b + 4, STATE_VERSION);
    ps_put_le64(b + 8, r->popt.seed);
    ps_put_le64(b + 16, r->popt.epoch);
    ps_put_le64(b + 24, r->next_deliver);
    ps_put_le64(b + 32, ps_plan_options_hash(&r->popt, r->manifest_hash));
    ps_put_le64(b + 40, r->manifest_hash);
    ps_put_le32(b + 48, r->popt.rank);
    ps_put_le32(b + 52, r->popt.world_size);
    ps_put_le32(b + 56, r->popt.batch_size);
    ps_put_le32(b + 60, r->popt.pad_multiple);
    ps_put_le64(b + 64, r->popt.max_tokens);
    ps_put_le32(b + 72, r->popt.shuffle_window);
    ps_put_le32(b + 76, r->popt.sort_pool);
    b[80] = (unsigned char)(r->popt.shuffle != 0);
    b[81] = (unsigned char)(r->popt.drop_last != 0);
    b[82] = (unsigned char)(r->popt.skip_long != 0);
    ps_put_le32(b + 84, r->popt.pack);
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
    rd_state s = {
        .seed = ps_get_le64(b + 8),
        .epoch = ps_get_le64(b + 16),
        .position = ps_get_le64(b + 24),
        .plan_hash = ps_get_le64(b + 32),
        .set_hash = ps_get_le64(b + 40),
        .rank = ps_get_le32(b + 48),
        .world_size = ps_get_le32(b + 52),
        .batch_size = ps_get_le32(b + 56),
        .pad_multiple = ps_get_le32(b + 60),
        .max_tokens = ps_get_le64(b + 64),
        .shuffle_window = ps_get_le32(b + 72),
        .sort_pool = ps_get_le32(b + 76),
        .shuffle = b[80],
        .drop_last = b[81],
        .skip_long = b[82],
        .pack = ps_get_le32(b + 84),
    };
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
