/* pairshard inspect --exec: a set's execution fingerprints (sets built with
 * --execute), one JSON line per record through the public reader API
 * (ps_exec_iter), and the statuses before × after on stderr. */
#include "cli/inspect_exec.h"

#include "common/ps_internal.h"
#include "pairshard/reader.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static const char *status_name(unsigned s)
{
    static const char *const N[] = {"ok", "empty", "error", "timeout", "no_database"};
    return s < 5 ? N[s] : "not_run";
}

static json_t *side(unsigned status, uint64_t rows, uint64_t hash)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
    return json_pack("{sssIss}", "status", status_name(status), "rows", (json_int_t)rows, "hash",
                     hex);
}

/* One record's line; 0 or PS_ENOMEM. */
static int print_record(const char *id, size_t id_len, const ps_exec_fingerprint *f)
{
    json_t *o = json_pack("{ss#soso}", "id", id, (int)id_len, "before",
                          side(f->status_before, f->rows_before, f->hash_before), "after",
                          side(f->status_after, f->rows_after, f->hash_after));
    if (o)
        json_object_set_new(o, "sql_changed", json_boolean(f->flags & PS_EXEC_SQL_CHANGED));
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text)
        return PS_ENOMEM;
    puts(text);
    free(text);
    return 0;
}

int ps_inspect_exec(const char *dir, ps_error *err)
{
    ps_exec_iter *it;
    int rc = ps_exec_iter_open(dir, &it, err);
    if (rc)
        return rc;
    uint64_t table[6][6] = {{0}}, n = 0, changed = 0;
    const char *id;
    size_t id_len;
    ps_exec_fingerprint f;
    while ((rc = ps_exec_iter_next(it, &id, &id_len, &f, err)) == 1) {
        if ((rc = print_record(id, id_len, &f))) {
            ps_error_set(err, rc, "out of memory");
            break;
        }
        table[f.status_before < 5 ? f.status_before : 5][f.status_after < 5 ? f.status_after : 5]++;
        changed += f.status_before == f.status_after && f.rows_before == f.rows_after &&
                   f.hash_before == f.hash_after ? 0 : 1;
        n++;
    }
    ps_exec_iter_close(it);
    if (rc < 0)
        return rc;
    fprintf(stderr, "%llu records, %llu with another result after cleaning; before -> after:\n",
            (unsigned long long)n, (unsigned long long)changed);
    for (unsigned b = 0; b < 6; b++)
        for (unsigned a = 0; a < 6; a++)
            if (table[b][a])
                fprintf(stderr, "  %-11s -> %-11s %llu\n", status_name(b), status_name(a),
                        (unsigned long long)table[b][a]);
    return 0;
}
