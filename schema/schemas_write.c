/*
 * The schemas of a set written back as one Spider-format tables.json, in
 * db_id order: what a shard set embeds (preprocess/schemas.json) so that
 * serving renders {schema:...} from exactly the schemas the build used,
 * not from whatever tables files are at hand. ps_schemas_load_tables reads
 * it back to the same digest (the preprocessor checks that on open).
 *
 * Kept column j is raw column j + 1: raw column 0 is Spider's "*" (table
 * -1), which the loader skips.
 */
#include "schema/schema.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *one(const ps_schema *d)
{
    json_t *tables = json_array(), *cols = json_array(), *types = json_array();
    json_t *pks = json_array(), *fks = json_array(), *ex = json_array();
    json_t *tnat = json_array(), *cnat = json_array();
    bool any_examples = false, any_natural = d->tables_natural != NULL;
    for (size_t i = 0; i < d->n_tables; i++) {
        json_array_append_new(tables, json_string(d->tables[i]));
        const char *n = d->tables_natural ? d->tables_natural[i] : NULL;
        json_array_append_new(tnat, n ? json_string(n) : json_null());
    }
    json_array_append_new(cols, json_pack("[is]", -1, "*"));
    json_array_append_new(cnat, json_pack("[is]", -1, "*"));
    json_array_append_new(types, json_string("text"));
    json_array_append_new(ex, json_null());
    for (size_t j = 0; j < d->n_columns; j++) {
        const ps_schema_column *c = &d->columns[j];
        json_array_append_new(ex, c->examples ? json_string(c->examples) : json_null());
        any_examples |= c->examples != NULL;
        json_array_append_new(cols, json_pack("[Is]", (json_int_t)c->table, c->name));
        json_array_append_new(cnat, c->natural ? json_pack("[Is]", (json_int_t)c->table,
                                                           c->natural)
                                               : json_null());
        any_natural |= c->natural != NULL;
        json_array_append_new(types, json_string(c->type ? c->type : ""));
        if (c->primary)
            json_array_append_new(pks, json_integer((json_int_t)j + 1));
    }
    for (size_t k = 0; k < d->n_fks; k++)
        json_array_append_new(fks, json_pack("[II]", (json_int_t)d->fks[k].column + 1,
                                             (json_int_t)d->fks[k].ref_column + 1));
    json_t *o = json_pack("{sssososososo}", "db_id", d->db_id, "table_names_original", tables,
                          "column_names_original", cols, "column_types", types, "primary_keys",
                          pks, "foreign_keys", fks);
    /* the example values of {schema:ddl_values}, only when the databases
     * gave some (pairshard's own member; other readers ignore it) */
    if (o && any_examples)
        json_object_set(o, "column_examples", ex);
    /* the natural-language names schema selection reads, as Spider
     * writes them (absent entries null) */
    if (o && any_natural) {
        json_object_set(o, "table_names", tnat);
        json_object_set(o, "column_names", cnat);
    }
    json_decref(tnat);
    json_decref(cnat);
    json_decref(ex);
    return o;
}

int ps_schemas_to_tables_json(const ps_schemas *s, char **out, size_t *len, ps_error *err)
{
    *out = NULL;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < ps_schemas_count(s); i++) {
        json_t *o = one(ps_schemas_at(s, i));
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            arr = NULL;
        }
    }
    char *text = arr ? json_dumps(arr, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(arr);
    if (!text)
        return ps_error_set(err, PS_ENOMEM, "out of memory serializing the schemas");
    *out = text;
    *len = strlen(text);
    return 0;
}
