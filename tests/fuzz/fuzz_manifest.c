/*
 * The manifest reader (ps_manifest_read) on hostile bytes, written as
 * DIR/manifest.json. When it accepts the manifest, every array it sized
 * from the manifest is walked and the shard names are rechecked: the
 * documented limits must hold and no name may leave the set directory; the
 * accounting's sums are checked (ps_accounting_check), which must answer
 * PS_ECORRUPT with a message, never crash.
 */
#include "store/inspect.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write("manifest.json", data, size);
    ps_manifest *m = NULL;
    ps_error err = {0};
    int rc = ps_manifest_read(fuzz_dir(), &m, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0) {
        if (rc != PS_EFORMAT && rc != PS_EVERSION && rc != PS_ENOMEM && rc != PS_EIO)
            abort();
        return 0;
    }
    if (m->n_shards > PS_MANIFEST_MAX_SHARDS || m->n_buckets > PS_MANIFEST_MAX_BUCKETS ||
        m->n_labels > PS_MANIFEST_MAX_LABELS || m->format_version > PS_MANIFEST_FORMAT_VERSION)
        abort();
    if (m->id_width != 2 && m->id_width != 4)
        abort();
    volatile uint64_t sink = 0;
    for (size_t b = 0; b < m->n_buckets; b++) {
        if (b && m->bounds[b] <= m->bounds[b - 1])
            abort(); /* bounds ascend */
        sink += m->bounds[b];
    }
    for (size_t l = 0; l < m->n_labels; l++)
        sink += strlen(m->labels[l]) + (m->label_kept ? m->label_kept[l] : 0);
    for (size_t s = 0; s < m->n_shards; s++) {
        const ps_mf_shard *sh = &m->shards[s];
        if (!ps_shard_name_ok(sh->file) || strchr(sh->file, '/') || strlen(sh->sha256) > 64)
            abort();
        for (size_t b = 0; b < m->n_buckets; b++)
            sink += sh->buckets[b].records + sh->buckets[b].tokens + sh->buckets[b].blocks;
        for (size_t t = 0; t < s; t++)
            if (strcmp(m->shards[t].file, sh->file) == 0)
                abort(); /* listed twice */
    }
    if (m->has_totals)
        for (size_t b = 0; b < m->n_buckets; b++)
            sink += m->total_buckets[b].records;
    sink += strlen(m->tool_version) + strlen(m->vocab_sha256);
    (void)sink;
    /* the accounting's sums, as --verify checks them (without blocks) */
    rc = ps_accounting_check(m, NULL, "manifest.json", &err);
    if (rc && rc != PS_ECORRUPT && rc != PS_ENOMEM)
        abort();
    FUZZ_CHECK_ERROR(rc, err);
    ps_manifest_free(m);
    return 0;
}
