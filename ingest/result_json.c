/*
 * The JSONL forms of a record outcome, shared by `pairshard clean` and the
 * build's rejects file, so the formats exist once:
 *   kept       {"id","question","sql","label","source"}
 *   rejected   {"source","reason","rule"?,"detail","id"?,"label"?,
 *               "original", "original_base64"?, "original_truncated"?}
 *   duplicate  {"id","source","duplicate_of","label","question","sql"}
 * A rejected record's original bytes may be invalid UTF-8: then "original"
 * shows them with U+FFFD and "original_base64" holds them exactly.
 */
#include "ingest/ingest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static char *base64(const unsigned char *p, size_t n)
{
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

static int set_original(json_t *o, const ps_clean_result *r)
{
    size_t bad = ps_utf8_check(r->original, r->original_len);
    if (bad == r->original_len)
        return json_object_set_new(o, "original", json_stringn(r->original, r->original_len));
    ps_buf fixed;
    ps_buf_init(&fixed);
    if (ps_utf8_repair(r->original, r->original_len, &fixed, NULL)) {
        ps_buf_free(&fixed); /* holds what was reserved before the failure */
        return -1;
    }
    int rc = json_object_set_new(o, "original", json_stringn(fixed.data, fixed.len));
    ps_buf_free(&fixed);
    char *b64 = base64((const unsigned char *)r->original, r->original_len);
    if (!b64)
        return -1;
    rc |= json_object_set_new(o, "original_base64", json_string(b64));
    free(b64);
    return rc;
}

/* Appends s as a JSON string, escaped exactly as jansson's compact output
 * escapes it (", \\, and C0 controls; valid UTF-8 passes through), so
 * that the fast path and jansson write the same bytes. */
static int put_string(ps_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (ps_buf_reserve(b, n + 2))
        return PS_ENOMEM;
    b->data[b->len++] = '"';
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        /* 8 bytes at a time while none needs escaping */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            uint64_t x1 = w ^ 0x2222222222222222ULL, x2 = w ^ 0x5C5C5C5C5C5C5C5CULL;
            uint64_t hit = (((x1 - 0x0101010101010101ULL) & ~x1) |
                            ((x2 - 0x0101010101010101ULL) & ~x2) |
                            ((w - 0x2020202020202020ULL) & ~w)) &
                           0x8080808080808080ULL;
            if (hit)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (ps_buf_append(b, s + run, i - run))
            return PS_ENOMEM;
        char esc[7] = {'\\', 0};
        size_t k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            k = 6;
        }
        if (ps_buf_append(b, esc, k))
            return PS_ENOMEM;
        run = i + 1;
    }
    if (ps_buf_append(b, s + run, n - run) || ps_buf_putc(b, '"'))
        return PS_ENOMEM;
    return 0;
}

/* ,"db_id","prompt","completion","sql_check","sql_message": each only
 * when the run has it (schemas, a template). */
static int put_text2sql(ps_buf *b, const ps_clean_result *r)
{
    int rc = 0;
    if (r->db_id) {
        rc = rc ? rc : ps_buf_puts(b, ",\"db_id\":");
        rc = rc ? rc : put_string(b, r->db_id, strlen(r->db_id));
    }
    if (r->prompt) {
        rc = rc ? rc : ps_buf_puts(b, ",\"prompt\":");
        rc = rc ? rc : put_string(b, r->prompt, r->prompt_len);
        rc = rc ? rc : ps_buf_puts(b, ",\"completion\":");
        rc = rc ? rc : (r->completion ? put_string(b, r->completion, r->completion_len)
                                      : ps_buf_puts(b, "null"));
    }
    if (r->sql_check) {
        rc = rc ? rc : ps_buf_puts(b, ",\"sql_check\":");
        rc = rc ? rc : put_string(b, r->sql_check, strlen(r->sql_check));
    }
    if (r->sql_message) {
        rc = rc ? rc : ps_buf_puts(b, ",\"sql_message\":");
        rc = rc ? rc : put_string(b, r->sql_message, strlen(r->sql_message));
    }
    return rc;
}

/* The kept record, the hot path: written directly, no DOM, at the end of
 * b (on failure b->len is put back). */
static int kept_json(const ps_clean_result *r, ps_buf *b)
{
    size_t at = b->len;
    int rc = ps_buf_reserve(b, r->question_len + r->sql_len + 128);
    rc = rc ? rc : ps_buf_puts(b, "{\"id\":");
    rc = rc ? rc : put_string(b, r->id, strlen(r->id));
    rc = rc ? rc : ps_buf_puts(b, ",\"question\":");
    rc = rc ? rc : put_string(b, r->question, r->question_len);
    rc = rc ? rc : ps_buf_puts(b, ",\"sql\":");
    rc = rc ? rc : put_string(b, r->sql, r->sql_len);
    rc = rc ? rc : ps_buf_puts(b, ",\"label\":");
    rc = rc ? rc : (r->label ? put_string(b, r->label, strlen(r->label)) : ps_buf_puts(b, "null"));
    rc = rc ? rc : put_text2sql(b, r);
    rc = rc ? rc : ps_buf_puts(b, ",\"source\":");
    rc = rc ? rc : put_string(b, r->source, strlen(r->source));
    rc = rc ? rc : ps_buf_putc(b, '}');
    if (rc) {
        b->len = at;
        return PS_ENOMEM;
    }
    return 0;
}

static bool kept_fast(const ps_clean_result *r)
{
    return r->outcome == PS_OUTCOME_KEPT &&
           ps_utf8_check(r->source, strlen(r->source)) == strlen(r->source);
}

int ps_clean_result_json_append(const ps_clean_result *r, ps_buf *b)
{
    if (kept_fast(r))
        return kept_json(r, b);
    char *line;
    size_t len;
    int rc = ps_clean_result_json(r, &line, &len);
    if (rc)
        return rc;
    rc = ps_buf_append(b, line, len) ? PS_ENOMEM : 0;
    free(line);
    return rc;
}

int ps_clean_result_json(const ps_clean_result *r, char **out, size_t *len)
{
    *out = NULL;
    if (kept_fast(r)) {
        ps_buf b;
        ps_buf_init(&b);
        if (kept_json(r, &b)) {
            ps_buf_free(&b);
            return PS_ENOMEM;
        }
        *out = b.data;
        *len = b.len;
        return 0;
    }
    json_t *o = json_object();
    if (!o)
        return PS_ENOMEM;
    int rc = 0;
    switch (r->outcome) {
    case PS_OUTCOME_KEPT:
        rc |= json_object_set_new(o, "id", json_string(r->id));
        rc |= json_object_set_new(o, "question", json_stringn(r->question, r->question_len));
        rc |= json_object_set_new(o, "sql", json_stringn(r->sql, r->sql_len));
        rc |= json_object_set_new(o, "label", str_or_null(r->label));
        if (r->db_id)
            rc |= json_object_set_new(o, "db_id", json_string(r->db_id));
        if (r->prompt) {
            rc |= json_object_set_new(o, "prompt", json_stringn(r->prompt, r->prompt_len));
            rc |= json_object_set_new(o, "completion",
                                      r->completion
                                          ? json_stringn(r->completion, r->completion_len)
                                          : json_null());
        }
        if (r->sql_check)
            rc |= json_object_set_new(o, "sql_check", json_string(r->sql_check));
        if (r->sql_message)
            rc |= json_object_set_new(o, "sql_message", json_string(r->sql_message));
        rc |= json_object_set_new(o, "source", json_string(r->source));
        break;
    case PS_OUTCOME_DUPLICATE:
        rc |= json_object_set_new(o, "id", json_string(r->id));
        rc |= json_object_set_new(o, "source", json_string(r->source));
        rc |= json_object_set_new(o, "duplicate_of", json_string(r->duplicate_of));
        rc |= json_object_set_new(o, "label", str_or_null(r->label));
        rc |= json_object_set_new(o, "question", json_stringn(r->question, r->question_len));
        rc |= json_object_set_new(o, "sql", json_stringn(r->sql, r->sql_len));
        break;
    case PS_OUTCOME_REJECTED:
        rc |= json_object_set_new(o, "source", json_string(r->source));
        rc |= json_object_set_new(o, "reason", json_string(r->reason));
        if (r->rule)
            rc |= json_object_set_new(o, "rule", json_string(r->rule));
        rc |= json_object_set_new(o, "detail", json_string(r->detail ? r->detail : ""));
        if (r->id)
            rc |= json_object_set_new(o, "id", json_string(r->id));
        if (r->label)
            rc |= json_object_set_new(o, "label", json_string(r->label));
        rc |= set_original(o, r);
        if (r->original_truncated)
            rc |= json_object_set_new(o, "original_truncated", json_true());
        break;
    }
    if (rc) {
        json_decref(o);
        return PS_ENOMEM;
    }
    *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!*out)
        return PS_ENOMEM;
    *len = strlen(*out);
    return 0;
}
