/* The hardness of a gold SQL query: easy, medium, hard or extra, by the
 * rules of Spider's evaluation script (eval_hardness), which judges three
 * counts of the query its parser (process_sql) builds:
 *
 *   component1  WHERE, GROUP BY, ORDER BY and LIMIT present (1 each), one
 *               per table past the first in FROM, one per OR and per LIKE
 *               in the ON, WHERE and HAVING conditions;
 *   component2  the subqueries that are a value of those conditions, plus
 *               one for a following INTERSECT / UNION / EXCEPT;
 *   others      one each for: more than one "aggregate", more than one
 *               SELECT item, more than one WHERE condition, more than one
 *               GROUP BY item.
 *
 * The script's aggregate count is its own: SELECT items starting with
 * MAX/MIN/COUNT/SUM/AVG, aggregates in ORDER BY items and GROUP BY items,
 * and — because it tests the first element of a condition tuple, which is
 * the NOT flag — each NOT condition of WHERE and HAVING, plus each AND/OR
 * between HAVING conditions (the strings of the list pass its test). The
 * aggregate inside a HAVING condition does not count. We reproduce that.
 *
 * Only the outermost SELECT (the left side of a set operation) is counted;
 * nested queries count as one each, whatever is inside. None of this needs
 * the schema: process_sql resolves columns against it, which decides
 * whether a query parses, never what the counts are. So we count on tokens
 * and clauses, not a parse: clause keywords, parentheses, commas and
 * AND/OR at the query's own nesting level. Beyond what process_sql accepts
 * we stay lenient: comma joins are tables, AND/OR inside parentheses are
 * connectors, a WITH's queries are nested queries. A text that is no
 * query (no SELECT, an unclosed quote or parenthesis) is unclassified. */
#include "schema/schema.h"

#include <stdlib.h>
#include <string.h>

enum { T_WORD, T_STR, T_IDENT, T_LP, T_RP, T_COMMA, T_SEMI, T_OP };

/* Keywords the counts look at. */
enum {
    K_NONE, K_SELECT, K_FROM, K_WHERE, K_GROUP, K_HAVING, K_ORDER, K_LIMIT, K_INTERSECT,
    K_UNION, K_EXCEPT, K_JOIN, K_ON, K_AND, K_OR, K_NOT, K_LIKE, K_BETWEEN, K_IS, K_WITH,
    K_DISTINCT, K_ALL, K_AGG, K_N
};

#define KW(w, k) {w, sizeof w - 1, k}
static const struct {
    const char *w;
    size_t len;
    int k;
} KEYWORDS[] = {
    KW("select", K_SELECT), KW("from", K_FROM),         KW("where", K_WHERE),   KW("group", K_GROUP),
    KW("having", K_HAVING), KW("order", K_ORDER),       KW("limit", K_LIMIT),   KW("intersect", K_INTERSECT),
    KW("union", K_UNION),   KW("except", K_EXCEPT),     KW("join", K_JOIN),     KW("on", K_ON),
    KW("and", K_AND),       KW("or", K_OR),             KW("not", K_NOT),       KW("like", K_LIKE),
    KW("between", K_BETWEEN), KW("is", K_IS),           KW("with", K_WITH),     KW("distinct", K_DISTINCT),
    KW("all", K_ALL),       KW("max", K_AGG),           KW("min", K_AGG),       KW("count", K_AGG),
    KW("sum", K_AGG),       KW("avg", K_AGG),
};

typedef struct tok {
    unsigned char type, kw;
    uint32_t match; /* T_LP: the index of its ')'; T_RP: of its '(' */
} tok;

typedef struct toks {
    tok *t;
    uint32_t n;
} toks;

static bool word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c == '.' || c >= 0x80;
}

/* The keyword a word is (K_NONE: none): its length and first letter pick
 * the few candidates, compared case-insensitively. */
static int keyword(const char *s, size_t n)
{
    if (n < 2 || n > 9)
        return K_NONE;
    char low[10];
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    for (size_t i = 0; i < sizeof KEYWORDS / sizeof *KEYWORDS; i++)
        if (KEYWORDS[i].w[0] == low[0] && KEYWORDS[i].len == n && !memcmp(KEYWORDS[i].w, low, n))
            return KEYWORDS[i].k;
    return K_NONE;
}

/* The length of the token starting at s[i] (not blank, not a comment) and
 * its type; 0 when a quote never closes. */
static size_t token_at(const char *s, size_t len, size_t i, unsigned char *type)
{
    unsigned char c = (unsigned char)s[i];
    if (c == '\'' || c == '"' || c == '`' || c == '[') {
        bool closed;
        size_t e = ps_sql_quoted_end(s, len, i, c == '[' ? ']' : (char)c, &closed);
        *type = c == '\'' || c == '"' ? T_STR : T_IDENT;
        return closed ? e - i : 0;
    }
    if (word_byte(c)) {
        size_t e = i;
        while (e < len && word_byte((unsigned char)s[e]))
            e++;
        *type = T_WORD;
        return e - i;
    }
    *type = c == '(' ? T_LP : c == ')' ? T_RP : c == ',' ? T_COMMA : c == ';' ? T_SEMI : T_OP;
    return 1;
}

/* Splits the SQL into tokens and pairs the parentheses. 0, 1 (not a
 * query: an unclosed quote, comment or parenthesis) or PS_ENOMEM. */
static int tokenize(const char *s, size_t len, toks *out)
{
    out->t = malloc((len + 1) * sizeof *out->t);
    if (!out->t)
        return PS_ENOMEM;
    uint32_t n = 0, depth = 0, *open = malloc((len + 1) * sizeof *open);
    if (!open)
        return PS_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < len && !rc;) {
        unsigned char c = (unsigned char)s[i];
        bool closed;
        size_t past_comment = ps_sql_comment_end(s, len, i, &closed);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            i++;
        } else if (past_comment != i) {
            rc = closed ? 0 : 1;
            i = past_comment;
        } else {
            tok t = {0, K_NONE, 0};
            size_t k = token_at(s, len, i, &t.type);
            if (!k) {
                rc = 1;
                break;
            }
            if (t.type == T_WORD)
                t.kw = (unsigned char)keyword(s + i, k);
            if (t.type == T_LP) {
                open[depth++] = n;
            } else if (t.type == T_RP) {
                if (!depth) {
                    rc = 1;
                    break;
                }
                t.match = open[--depth];
                out->t[t.match].match = n;
            }
            out->t[n++] = t;
            i += k;
        }
    }
    free(open);
    out->n = n;
    return rc ? rc : depth ? 1 : 0;
}

/* What the conditions of a clause hold. */
typedef struct conds {
    uint32_t units, connectors, ors, likes, nots, nested;
} conds;

/* Whether t[i] opens a parenthesized query. */
static bool is_query_group(const toks *q, uint32_t i)
{
    return q->t[i].type == T_LP && i + 1 < q->n &&
           (q->t[i + 1].kw == K_SELECT || q->t[i + 1].kw == K_WITH);
}

/* The conditions in t[b, e): split at AND/OR (the AND of a BETWEEN
 * excepted), inside parentheses too; a subquery is one nested query and
 * is not looked into. */
static void count_conds(const toks *q, uint32_t b, uint32_t e, conds *c)
{
    bool between = false;
    if (b >= e)
        return;
    c->units++;
    for (uint32_t i = b; i < e; i++) {
        const tok *t = &q->t[i];
        if (is_query_group(q, i)) {
            c->nested++;
            i = t->match;
        } else if (t->kw == K_BETWEEN) {
            between = true;
        } else if (t->kw == K_AND && between) {
            between = false;
        } else if (t->kw == K_AND || t->kw == K_OR) {
            c->units++;
            c->connectors++;
            c->ors += t->kw == K_OR;
        } else if (t->kw == K_LIKE) {
            c->likes++;
        } else if (t->kw == K_NOT && !(i > b && q->t[i - 1].kw == K_IS)) {
            c->nots++;
        }
    }
}

/* The next token at this level from i (a parenthesized group is skipped). */
static uint32_t next_at_level(const toks *q, uint32_t i)
{
    return q->t[i].type == T_LP ? q->t[i].match + 1 : i + 1;
}

/* Items of a comma list in t[b, e) and how many start with an aggregate
 * (`agg_first`) or hold one at their level (otherwise). */
static void count_items(const toks *q, uint32_t b, uint32_t e, bool agg_first, uint32_t *items,
                        uint32_t *aggs)
{
    if (b < e && (q->t[b].kw == K_DISTINCT || q->t[b].kw == K_ALL))
        b++;
    if (b >= e)
        return;
    bool start = true;
    for (uint32_t i = b; i < e; i = next_at_level(q, i)) {
        const tok *t = &q->t[i];
        if (start)
            (*items)++;
        bool agg = t->kw == K_AGG && i + 1 < e && q->t[i + 1].type == T_LP;
        if (agg && (start || !agg_first))
            (*aggs)++;
        start = t->type == T_COMMA;
    }
}

/* The FROM clause t[b, e): its tables (one, plus one per JOIN or comma)
 * and its ON conditions. */
static uint32_t count_from(const toks *q, uint32_t b, uint32_t e, conds *c)
{
    if (b >= e)
        return 0;
    uint32_t tables = 1, on = 0;
    for (uint32_t i = b; i < e; i = next_at_level(q, i)) {
        int k = q->t[i].kw;
        bool sep = k == K_JOIN || q->t[i].type == T_COMMA;
        if (on && sep) {
            count_conds(q, on, i, c);
            on = 0;
        }
        tables += sep;
        if (k == K_ON)
            on = i + 1;
    }
    if (on)
        count_conds(q, on, e, c);
    return tables;
}

enum { CL_SELECT, CL_FROM, CL_WHERE, CL_GROUP, CL_HAVING, CL_ORDER, CL_LIMIT, CL_N };

/* The clauses of the SELECT at t[b], up to e or a set operator or ')' at
 * its level: where each clause's keyword is (kw) and its body starts
 * (at; UINT32_MAX: absent), and where the query ends (*end). */
typedef struct clause_map {
    uint32_t kw[CL_N], at[CL_N], end;
    bool set_op;
} clause_map;

static void clauses(const toks *q, uint32_t b, uint32_t e, clause_map *m)
{
    for (int k = 0; k < CL_N; k++)
        m->kw[k] = m->at[k] = UINT32_MAX;
    m->kw[CL_SELECT] = b;
    m->at[CL_SELECT] = b + 1;
    m->set_op = false;
    uint32_t i = b + 1;
    for (; i < e; i = next_at_level(q, i)) {
        int k = q->t[i].kw;
        bool by = i + 1 < e && (k == K_GROUP || k == K_ORDER);
        if (k == K_INTERSECT || k == K_UNION || k == K_EXCEPT) {
            m->set_op = true;
            break;
        }
        if (q->t[i].type == T_RP)
            break;
        int cl = k == K_FROM ? CL_FROM : k == K_WHERE ? CL_WHERE : k == K_HAVING ? CL_HAVING
               : k == K_LIMIT ? CL_LIMIT : by && k == K_GROUP ? CL_GROUP : by ? CL_ORDER : -1;
        if (cl >= 0 && m->at[cl] == UINT32_MAX) {
            m->kw[cl] = i;
            m->at[cl] = i + 1 + (cl == CL_GROUP || cl == CL_ORDER);
        }
    }
    m->end = i;
}

/* Where clause `cl` ends: at the next clause keyword after its own. */
static uint32_t clause_end(const clause_map *m, int cl)
{
    uint32_t e = m->end;
    for (int k = 0; k < CL_N; k++)
        if (m->kw[k] != UINT32_MAX && m->kw[k] > m->kw[cl] && m->kw[k] < e)
            e = m->kw[k];
    return e;
}

/* The counts of the SELECT at t[b] (bounded by e). */
static void count_select(const toks *q, uint32_t b, uint32_t e, ps_sql_hardness_counts *h)
{
    clause_map m;
    clauses(q, b, e, &m);
    const uint32_t *at = m.at;
    conds from = {0}, where = {0}, having = {0};
    uint32_t sel_items = 0, sel_aggs = 0, group_items = 0, group_aggs = 0, order_items = 0,
             order_aggs = 0, tables = 0;
    count_items(q, at[CL_SELECT], clause_end(&m, CL_SELECT), true, &sel_items, &sel_aggs);
    if (at[CL_FROM] != UINT32_MAX)
        tables = count_from(q, at[CL_FROM], clause_end(&m, CL_FROM), &from);
    if (at[CL_WHERE] != UINT32_MAX)
        count_conds(q, at[CL_WHERE], clause_end(&m, CL_WHERE), &where);
    if (at[CL_GROUP] != UINT32_MAX)
        count_items(q, at[CL_GROUP], clause_end(&m, CL_GROUP), true, &group_items, &group_aggs);
    if (at[CL_HAVING] != UINT32_MAX)
        count_conds(q, at[CL_HAVING], clause_end(&m, CL_HAVING), &having);
    if (at[CL_ORDER] != UINT32_MAX)
        count_items(q, at[CL_ORDER], clause_end(&m, CL_ORDER), false, &order_items, &order_aggs);
    h->component1 += (where.units > 0) + (group_items > 0) + (order_items > 0) +
                     (at[CL_LIMIT] != UINT32_MAX) + (tables > 1 ? tables - 1 : 0) + from.ors +
                     where.ors + having.ors + from.likes + where.likes + having.likes;
    h->component2 += from.nested + where.nested + having.nested + m.set_op;
    uint32_t aggs = sel_aggs + where.nots + group_aggs + order_aggs + having.connectors + having.nots;
    h->others += (aggs > 1) + (sel_items > 1) + (where.units > 1) + (group_items > 1);
}

/* Past a WITH's definitions (each a nested query) to the main SELECT:
 * its index, or n when there is none. */
static uint32_t skip_with(const toks *q, uint32_t i, ps_sql_hardness_counts *h)
{
    for (i++; i < q->n && q->t[i].kw != K_SELECT; i = next_at_level(q, i))
        if (is_query_group(q, i))
            h->component2++;
    return i;
}

const char *ps_sql_hardness_name(ps_sql_hardness level)
{
    static const char *const names[] = {"easy", "medium", "hard", "extra", "unclassified"};
    return level >= PS_HARDNESS_EASY && level <= PS_HARDNESS_UNCLASSIFIED ? names[level] : NULL;
}

ps_sql_hardness ps_sql_hardness_of(const ps_sql_hardness_counts *h)
{
    uint32_t c1 = h->component1, c2 = h->component2, o = h->others;
    if (c1 <= 1 && o == 0 && c2 == 0)
        return PS_HARDNESS_EASY;
    if ((o <= 2 && c1 <= 1 && c2 == 0) || (c1 <= 2 && o < 2 && c2 == 0))
        return PS_HARDNESS_MEDIUM;
    if ((o > 2 && c1 <= 2 && c2 == 0) || (c1 > 2 && c1 <= 3 && o <= 2 && c2 == 0) ||
        (c1 <= 1 && o == 0 && c2 <= 1))
        return PS_HARDNESS_HARD;
    return PS_HARDNESS_EXTRA;
}

int ps_sql_hardness_classify(const char *sql, size_t len, ps_sql_hardness_counts *counts,
                             ps_sql_hardness *level)
{
    ps_sql_hardness_counts h = {0, 0, 0};
    toks q = {NULL, 0};
    *level = PS_HARDNESS_UNCLASSIFIED;
    /* token indices are 32-bit: a text past that is no gold query */
    int rc = sql && len < UINT32_MAX ? tokenize(sql, len, &q) : 1;
    if (rc < 0) {
        free(q.t);
        return rc;
    }
    uint32_t i = 0;
    if (!rc && q.n && q.t[0].kw == K_WITH)
        i = skip_with(&q, 0, &h);
    if (!rc && i < q.n && q.t[i].kw == K_SELECT) {
        count_select(&q, i, q.n, &h);
        *level = ps_sql_hardness_of(&h);
    }
    free(q.t);
    if (counts)
        *counts = h;
    return 0;
}
