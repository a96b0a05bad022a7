/* Tests of validate/'s SQL statistics (sql_stats.c, sql_json.c) and checks
 * (checks_sql.c): adding, merging parts, the JSON round trip and the
 * rejection of files that cannot be, sql_compile_regression naming the
 * rules, sql_compile_rate, both absent when nothing was checked, and the
 * "sql" section of report.json, the summary and report.html. The messages
 * are SQLite's own: each record's SQL is compiled (sqlite3_prepare_v2) on
 * a small in-memory copy of Spider's concert_singer schema. */
#include "tests/support/validate_fixture.h"
#include "validate/vsql.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const RULES[3] = {"fold-quotes", "rename-alias", "strip-semicolon"};

/* concert_singer's tables, as Spider's tables.json has them. */
static sqlite3 *spider_db(void)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE stadium (Stadium_ID int, Location text, Name text, "
                                  "Capacity int, PRIMARY KEY (Stadium_ID));"
                                  "CREATE TABLE singer (Singer_ID int, Name text, Country text, Age int, "
                                  "PRIMARY KEY (Singer_ID));"
                                  "CREATE TABLE concert (concert_ID int, concert_Name text, Stadium_ID int, "
                                  "PRIMARY KEY (concert_ID), FOREIGN KEY (Stadium_ID) REFERENCES "
                                  "stadium(Stadium_ID));",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    return db;
}

/* Compiles sql; *msg gets SQLite's message (static buffer per slot). The
 * class from the message, as schema/compile.c classifies it. */
static int compile(sqlite3 *db, const char *sql, char msg[256])
{
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
    sqlite3_finalize(st);
    msg[0] = '\0';
    if (rc == SQLITE_OK)
        return tail && strspn(tail, " ;\n") != strlen(tail) ? PS_SQL_MULTIPLE : PS_SQL_OK;
    snprintf(msg, 256, "%s", sqlite3_errmsg(db));
    if (strstr(msg, "syntax error") || strstr(msg, "unrecognized token") || strstr(msg, "incomplete"))
        return PS_SQL_SYNTAX;
    if (!strncmp(msg, "no such table", 13))
        return PS_SQL_NO_TABLE;
    if (!strncmp(msg, "no such column", 14))
        return PS_SQL_NO_COLUMN;
    if (!strncmp(msg, "ambiguous column", 16))
        return PS_SQL_AMBIGUOUS;
    if (!strncmp(msg, "no such function", 16) || strstr(msg, "wrong number of arguments"))
        return PS_SQL_NO_FUNCTION;
    return PS_SQL_OTHER;
}

typedef struct sqlrec {
    const char *id, *label, *raw, *clean; /* raw/clean NULL: not checked */
    unsigned char touched[3];
    int exec;
    uint64_t rows;
    int shortened;
    uint32_t tables, columns;
} sqlrec;

/* Spider-like records: SQL before and after a (sometimes faulty) cleaning. */
static const sqlrec RECS[] = {
    {"train.json:#0", "concert_singer", "SELECT count(*) FROM singer", "SELECT count(*) FROM singer",
     {0, 0, 0}, PS_EXEC_OK, 1, 0, 0, 0},
    /* rename-alias renamed AS T1 but not its references: cleaning broke it */
    {"train.json:#1", "concert_singer",
     "SELECT T1.Name FROM singer AS T1 JOIN concert AS T2 ON T1.Singer_ID = T2.Stadium_ID",
     "SELECT T1.Name FROM singer AS S1 JOIN concert AS T2 ON T1.Singer_ID = T2.Stadium_ID",
     {1, 2, 3}, -1, 0, 1, 1, 2},
    /* tokenized SQL, as in SParC: broken before and after */
    {"train.json:#2", "concert_singer", "SELECT Name FROM singer WHERE Country ! = \"France\"",
     "SELECT Name FROM singer WHERE Country ! = \"France\"", {0, 0, 0}, PS_EXEC_ERROR, 0, 0, 0, 0},
    /* fixed by cleaning */
    {"train.json:#3", "concert_singer", "SELECT Name FROM singer;;; SELECT 1",
     "SELECT Name FROM singer", {0, 0, 2}, PS_EXEC_EMPTY, 0, 0, 0, 0},
    {"train.json:#4", "world_1", NULL, NULL, {0, 0, 0}, -1, 0, 0, 0, 0}, /* unknown database */
    {"dev.json:#0", NULL, "SELECT Name FROM stadium WHERE Capacity > 5000",
     "SELECT Name FROM stadium WHERE Capacity > 5000", {0, 0, 0}, PS_EXEC_OK, 7, 1, 3, 1},
    {"dev.json:#1", NULL, "SELECT Stadium_ID FROM stadium JOIN concert", "SELECT Stadium_ID FROM stadium JOIN concert",
     {0, 0, 0}, -1, 0, 0, 0, 0},
    {"dev.json:#2", "concert_singer", "SELECT Name FROM \"a<b>&\"\"c\"", "SELECT Name FROM \"a<b>&\"\"c\"",
     {0, 0, 0}, -1, 0, 0, 0, 0},
};
#define NRECS (sizeof RECS / sizeof RECS[0])

/* Adds RECS[from, to) to v, compiling each. */
static void add_range(ps_vsql *v, sqlite3 *db, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const sqlrec *s = &RECS[i];
        char rm[256] = "", cm[256] = "";
        ps_vsql_record r = {.id = s->id, .label = s->label, .raw_class = -1, .clean_class = -1,
                            .touched = s->touched, .exec_status = s->exec, .exec_rows = s->rows,
                            .shortened = s->shortened, .tables_dropped = s->tables,
                            .columns_dropped = s->columns};
        if (s->raw) {
            r.raw_class = compile(db, s->raw, rm);
            r.raw_msg = rm;
        }
        if (s->clean) {
            r.clean_class = compile(db, s->clean, cm);
            r.clean_msg = cm;
        }
        if (s->exec == PS_EXEC_ERROR)
            r.exec_msg = cm;
        assert_int_equal(ps_vsql_add(v, &r), 0);
    }
}

static ps_vsql *whole(sqlite3 *db)
{
    ps_vsql *v = ps_vsql_new(RULES, 3);
    assert_non_null(v);
    add_range(v, db, 0, NRECS);
    return v;
}

static json_t *class_entry(json_t *j, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "classes"), i, e)
    if (!strcmp(json_string_value(json_object_get(e, "class")), name))
        return e;
    fail_msg("no class %s", name);
    return NULL;
}

static uint64_t jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    assert_true(json_is_integer(v));
    return (uint64_t)json_integer_value(v);
}

static void test_counts(void **state)
{
    (void)state;
    sqlite3 *db = spider_db();
    ps_vsql *v = whole(db);
    json_t *j = ps_vsql_to_json(v);
    assert_non_null(j);
    assert_int_equal(jint(j, "records"), NRECS);
    assert_int_equal(jint(j, "checked"), 7);
    assert_int_equal(jint(j, "compiled_raw"), 3);   /* #0, #1, dev #0 */
    assert_int_equal(jint(j, "checked_clean"), 7);
    assert_int_equal(jint(j, "compiled_clean"), 3); /* #0, #3, dev #0 */
    json_t *syn = class_entry(j, "syntax"), *col = class_entry(j, "no_such_column");
    assert_int_equal(jint(syn, "raw"), 1);
    assert_int_equal(jint(col, "raw"), 0);
    assert_int_equal(jint(col, "clean"), 1);
    json_t *ex = json_array_get(json_object_get(syn, "raw_examples"), 0);
    assert_string_equal(json_string_value(json_object_get(ex, "id")), "train.json:#2");
    assert_string_equal(json_string_value(json_object_get(ex, "message")), "unrecognized token: \"!\"");
    assert_int_equal(jint(class_entry(j, "multiple_statements"), "raw"), 1);
    assert_int_equal(jint(class_entry(j, "ambiguous_column"), "raw"), 1);
    json_t *tab = class_entry(j, "no_such_table");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(tab, "clean_examples"), 0), "message")),
                        "no such table: a<b>&\"c");
    /* the regression names the rule that changed it (2), not the one that only matched */
    json_t *reg = json_object_get(j, "regressions");
    assert_int_equal(jint(reg, "count"), 1);
    json_t *br = json_object_get(reg, "by_rule");
    assert_int_equal(json_array_size(br), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(br, 0), "rule")), "rename-alias");
    assert_string_equal(json_string_value(json_object_get(json_array_get(br, 1), "rule")), "strip-semicolon");
    json_t *rex = json_array_get(json_object_get(reg, "examples"), 0);
    assert_string_equal(json_string_value(json_object_get(rex, "id")), "train.json:#1");
    assert_true(json_is_null(json_object_get(rex, "raw_message")) ||
                !strcmp(json_string_value(json_object_get(rex, "raw_message")), ""));
    assert_string_equal(json_string_value(json_object_get(rex, "clean_message")), "no such column: T1.Name");
    assert_int_equal(jint(json_object_get(j, "fixed"), "count"), 1);
    /* per label; the unknown database's record is not counted as checked */
    json_t *la = json_array_get(json_object_get(j, "labels"), 0);
    assert_string_equal(json_string_value(json_object_get(la, "label")), "concert_singer");
    assert_int_equal(jint(la, "checked"), 5);
    assert_int_equal(jint(la, "compiled_raw"), 2);
    assert_int_equal(json_array_size(json_object_get(j, "labels")), 1);
    assert_int_equal(jint(json_object_get(j, "unlabeled"), "checked"), 2);
    json_t *exe = json_object_get(j, "execution");
    assert_int_equal(jint(exe, "executed"), 4);
    assert_int_equal(jint(exe, "rows"), 8);
    assert_int_equal(jint(json_object_get(exe, "statuses"), "error"), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(exe, "examples"), 0),
                                                          "status")), "error");
    json_t *sh = json_object_get(j, "shortening");
    assert_int_equal(jint(sh, "records"), 2);
    assert_int_equal(jint(sh, "tables_dropped"), 4);
    assert_int_equal(jint(sh, "columns_dropped"), 3);
    assert_false(ps_vsql_empty(v));
    json_decref(j);
    ps_vsql_free(v);
    /* nothing checked: empty */
    ps_vsql *e = ps_vsql_new(RULES, 3);
    add_range(e, db, 4, 5);
    assert_true(ps_vsql_empty(e));
    assert_true(ps_vsql_empty(NULL));
    ps_vsql_record bad = {.raw_class = PS_SQL_CLASSES, .clean_class = -1, .exec_status = -1};
    assert_int_equal(ps_vsql_add(e, &bad), PS_EINVAL);
    ps_vsql_free(e);
    sqlite3_close(db);
}

/* Parts merged in order give what one pass gives; different rules refuse. */
static void test_merge(void **state)
{
    (void)state;
    sqlite3 *db = spider_db();
    ps_vsql *v = whole(db);
    for (size_t cut = 0; cut <= NRECS; cut++) {
        ps_vsql *a = ps_vsql_new(RULES, 3), *b = ps_vsql_new(RULES, 3);
        add_range(a, db, 0, cut);
        add_range(b, db, cut, NRECS);
        assert_int_equal(ps_vsql_merge(a, b), 0);
        char *ta = json_text(ps_vsql_to_json(a)), *tv = json_text(ps_vsql_to_json(v));
        assert_string_equal(ta, tv);
        free(ta), free(tv);
        ps_vsql_free(a), ps_vsql_free(b);
    }
    ps_vsql *other = ps_vsql_new(RULES, 2);
    assert_int_equal(ps_vsql_merge(v, other), PS_EINVAL);
    ps_vsql_free(other);
    const char *renamed[3] = {"fold-quotes", "rename-alias", "strip"};
    other = ps_vsql_new(renamed, 3);
    assert_int_equal(ps_vsql_merge(v, other), PS_EINVAL);
    ps_vsql_free(other);
    /* examples stay the first five seen, across parts */
    ps_vsql *m = ps_vsql_new(NULL, 0);
    for (int part = 0; part < 3; part++) {
        ps_vsql *p = ps_vsql_new(NULL, 0);
        for (int i = 0; i < 4; i++) {
            char id[32], msg[256]; /* room for any two ints: -Wformat-truncation */
            snprintf(id, sizeof id, "p%d/%d", part, i);
            int cls = compile(db, "SELECT nope FROM singer", msg);
            ps_vsql_record r = {.id = id, .raw_class = cls, .raw_msg = msg, .clean_class = cls,
                                .clean_msg = msg, .exec_status = -1};
            assert_int_equal(ps_vsql_add(p, &r), 0);
        }
        assert_int_equal(ps_vsql_merge(m, p), 0);
        ps_vsql_free(p);
    }
    assert_int_equal(m->raw[PS_SQL_NO_COLUMN], 12);
    assert_int_equal(m->raw_ex[PS_SQL_NO_COLUMN].n, 5);
    assert_string_equal(m->raw_ex[PS_SQL_NO_COLUMN].e[4].id, "p1/0");
    assert_string_equal(m->raw_ex[PS_SQL_NO_COLUMN].e[0].a, "no such column: nope");
    ps_vsql_free(m);
    ps_vsql_free(v);
    sqlite3_close(db);
}

static int load_text(const char *text, ps_vsql **out, ps_error *err)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    int rc = ps_vsql_from_json(j, out, err);
    json_decref(j);
    return rc;
}

/* A mutation of the whole statistics' JSON that cannot be. */
typedef struct mutation {
    const char *path, *what; /* a /-separated path; the last step is set to `value` */
    const char *value;       /* JSON text; NULL: delete */
} mutation;

static json_t *walk(json_t *j, char *path, char **last)
{
    char *save, *tok = strtok_r(path, "/", &save), *next;
    while ((next = strtok_r(NULL, "/", &save))) {
        j = json_is_array(j) ? json_array_get(j, (size_t)atoi(tok)) : json_object_get(j, tok);
        tok = next;
    }
    *last = tok;
    return j;
}

static void test_json_round_trip_and_rejects(void **state)
{
    (void)state;
    sqlite3 *db = spider_db();
    ps_vsql *v = whole(db);
    json_t *j = ps_vsql_to_json(v);
    char *t1 = json_text(json_incref(j)); /* json_text takes a reference */
    ps_vsql *back = NULL;
    ps_error err = {0};
    assert_int_equal(load_text(t1, &back, &err), 0);
    char *t2 = json_text(ps_vsql_to_json(back));
    assert_string_equal(t1, t2);
    free(t2);
    ps_vsql_free(back);

    static const mutation M[] = {
        {"compiled_raw", "more compiled than checked", "8"},
        {"checked", "more checked than records", "9"},
        {"records", "negative", "-1"},
        {"classes/1/raw", "classes disagree", "2"},
        {"classes/1/class", "class out of order", "\"no_such_table\""},
        {"classes/0/raw_examples", "an example of class ok", "[{\"id\": \"x\", \"message\": null}]"},
        {"classes/1/raw_examples/0/message", "message of the wrong type", "17"},
        {"classes/1/raw_examples/0/id", "example without an id", NULL},
        {"labels/0/checked", "labels do not add up", "4"},
        {"labels/0/label", "label not a string", "3"},
        {"unlabeled", "unlabeled missing", NULL},
        {"regressions/count", "more regressions than broke", "4"},
        {"regressions/by_rule/0/rule", "an unknown rule", "\"no-such-rule\""},
        {"regressions/by_rule/1/rule", "a rule twice", "\"rename-alias\""},
        {"regressions/by_rule/0/count", "a rule over the count", "2"},
        {"regressions/examples", "more examples than the count",
         "[{\"id\": \"a\", \"raw_message\": null, \"clean_message\": null},"
         " {\"id\": \"b\", \"raw_message\": null, \"clean_message\": null}]"},
        {"fixed/count", "more fixed than failed raw", "5"},
        {"execution/executed", "execution does not add up", "3"},
        {"execution/statuses/ok", "a status missing", NULL},
        {"execution/examples/0/status", "an example that is no error", "\"ok\""},
        {"shortening/records", "more shortened than records", "99"},
        {"rules/1", "a rule named twice", "\"fold-quotes\""},
        {"rules", "rules not an array", "{}"},
    };
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++) {
        json_t *c = json_deep_copy(j);
        char path[128], *last;
        snprintf(path, sizeof path, "%s", M[i].path);
        json_t *parent = walk(c, path, &last);
        assert_non_null(parent);
        if (json_is_array(parent)) {
            if (M[i].value)
                json_array_set_new(parent, (size_t)atoi(last), json_loads(M[i].value, JSON_DECODE_ANY, NULL));
            else
                json_array_remove(parent, (size_t)atoi(last));
        } else if (M[i].value) {
            json_object_set_new(parent, last, json_loads(M[i].value, JSON_DECODE_ANY, NULL));
        } else {
            assert_int_equal(json_object_del(parent, last), 0);
        }
        ps_vsql *out = (ps_vsql *)1;
        ps_error e2 = {0};
        int rc = ps_vsql_from_json(c, &out, &e2);
        if (rc != PS_EFORMAT)
            fail_msg("mutation '%s' (%s) was accepted", M[i].path, M[i].what);
        assert_null(out);
        assert_non_null(strstr(e2.message, "sql statistics"));
        json_decref(c);
    }
    json_t *odd[] = {json_null(), json_array(), json_string("sql"), json_object()};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        ps_vsql *out;
        assert_int_equal(ps_vsql_from_json(odd[i], &out, &err), PS_EFORMAT);
        json_decref(odd[i]);
    }
    free(t1);
    json_decref(j);
    ps_vsql_free(v);
    sqlite3_close(db);
}

/* The report of a small build, with these SQL statistics added. */
static ps_vreport *report_with(const ps_vsql *v, const char *config)
{
    ps_vconfig *c = ps_vconfig_new();
    ps_error err = {0};
    if (config) {
        json_t *cj = json_loads(config, 0, NULL);
        assert_int_equal(ps_vconfig_apply_json(c, cj, &err), 0);
        json_decref(cj);
    }
    synth s;
    synth_plain(&s, 200);
    ps_vreport *r = synth_build(&s, c);
    assert_int_equal(ps_validate_sql(c, v, r, &err), 0);
    synth_free(&s);
    ps_vconfig_free(c);
    return r;
}

static void test_checks(void **state)
{
    (void)state;
    sqlite3 *db = spider_db();
    ps_vsql *v = whole(db);
    ps_vreport *r = report_with(v, NULL);
    /* one regression: fails, naming the rules by count and the record */
    assert_int_equal(verdict(r, "sql_compile_regression"), PS_VV_FAIL);
    assert_explains(r, "sql_compile_regression", "1 record compiled against its schema before cleaning");
    assert_explains(r, "sql_compile_regression", "changed by rule 'rename-alias' (1), 'strip-semicolon' (1)");
    assert_explains(r, "sql_compile_regression", "'train.json:#1'");
    assert_string_equal(ps_vreport_verdict(r), "fail");
    /* 3 of 7 raw compile: the data is suspect, a warning only */
    assert_int_equal(verdict(r, "sql_compile_rate"), PS_VV_WARN);
    assert_explains(r, "sql_compile_rate", "42.86% of raw SQL compiles against its schema (3 of 7");
    assert_explains(r, "sql_compile_rate", "the data itself is suspect");
    assert_string_equal(check_of(r, "sql_compile_rate")->compares, "raw");
    /* the terminal summary: each failing class with its first record and
     * SQLite's message (the raw one, else the cleaned one), then the labels */
    char *fsum = ps_vreport_summary(r);
    assert_non_null(strstr(fsum, "SQL: 7 checked, 3 compiled raw, 3 after cleaning, 1 regression\n"
                                 "  syntax              1 raw, 1 after cleaning; e.g. train.json:#2: "
                                 "unrecognized token: \"!\"\n"
                                 "  no_such_table       1 raw, 1 after cleaning; e.g. dev.json:#2: "
                                 "no such table: a<b>&\"c\n"
                                 "  no_such_column      0 raw, 1 after cleaning; e.g. train.json:#1: "
                                 "no such column: T1.Name\n"
                                 "  ambiguous_column    1 raw, 1 after cleaning; e.g. dev.json:#1: "
                                 "ambiguous column name: Stadium_ID\n"
                                 "  multiple_statements 1 raw, 0 after cleaning; e.g. train.json:#3\n"
                                 "  1 of 1 labels hold SQL that does not compile; lowest raw rate: "
                                 "'concert_singer', 2 of 5\n"
                                 "SQL executed: "));
    assert_null(strstr(fsum, "  ok "));
    assert_null(strstr(fsum, "no_such_function"));
    free(fsum);
    ps_vreport_free(r);
    /* the thresholds and modes come from the config */
    r = report_with(v, "{\"thresholds\": {\"sql_compile_regression\": 1, \"sql_compile_rate\": 0.4}}");
    assert_int_equal(verdict(r, "sql_compile_regression"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_compile_rate"), PS_VV_PASS);
    assert_string_equal(ps_vreport_verdict(r), "pass");
    ps_vreport_free(r);
    r = report_with(v, "{\"modes\": {\"sql_compile_regression\": \"warn\"}}");
    assert_int_equal(verdict(r, "sql_compile_regression"), PS_VV_WARN);
    assert_string_equal(ps_vreport_verdict(r), "warn");
    ps_vreport_free(r);
    ps_vsql_free(v);

    /* a clean set: 1,200 records compile before and after; both pass */
    ps_vsql *ok = ps_vsql_new(RULES, 3);
    for (int i = 0; i < 1200; i++) {
        char msg[256];
        int cls = compile(db, "SELECT T1.Name FROM singer AS T1", msg);
        ps_vsql_record rr = {.id = "x", .label = "concert_singer", .raw_class = cls, .clean_class = cls,
                             .exec_status = -1};
        assert_int_equal(ps_vsql_add(ok, &rr), 0);
    }
    r = report_with(ok, NULL);
    assert_int_equal(verdict(r, "sql_compile_regression"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_compile_rate"), PS_VV_PASS);
    assert_explains(r, "sql_compile_regression", "no record's SQL compiled before cleaning and not after");
    char *sum = ps_vreport_summary(r);
    assert_non_null(strstr(sum, "SQL: 1,200 checked, 1,200 compiled raw, 1,200 after cleaning, 0 regressions\n"));
    assert_null(strstr(sum, "after cleaning;")); /* no failing class, no label line */
    assert_null(strstr(sum, "labels hold"));
    free(sum);
    ps_vreport_free(r);
    ps_vsql_free(ok);

    /* nothing checked: neither check, and the report keeps its bytes */
    ps_vsql *none = ps_vsql_new(RULES, 3);
    add_range(none, db, 4, 5);
    ps_vreport *r1 = report_with(none, NULL), *r0 = report_with(NULL, NULL);
    assert_int_equal(r1->n, r0->n);
    for (size_t i = 0; i < r1->n; i++)
        assert_null(strstr(r1->checks[i].name, "sql_compile"));
    char *a = ps_vreport_json(r1), *b = ps_vreport_json(r0);
    assert_string_equal(a, b);
    assert_null(strstr(a, "sql_compile"));
    json_t *ja = json_loads(a, 0, NULL);
    assert_null(json_object_get(ja, "sql"));
    json_decref(ja);
    char *s1 = ps_vreport_summary(r1);
    assert_null(strstr(s1, "SQL:"));
    free(s1);
    free(a), free(b);
    ps_vreport_free(r1), ps_vreport_free(r0);
    ps_vsql_free(none);
    sqlite3_close(db);
}

/* report.json carries "sql", its checks and their thresholds; report.html
 * has the section, with SQLite's messages escaped. */
static void test_report(void **state)
{
    (void)state;
    sqlite3 *db = spider_db();
    ps_vsql *v = whole(db);
    ps_vreport *r = report_with(v, NULL);
    char *text = ps_vreport_json(r);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    json_t *sql = json_object_get(j, "sql");
    assert_true(json_is_object(sql));
    assert_int_equal(jint(sql, "checked"), 7);
    assert_true(json_is_number(json_object_get(json_object_get(j, "thresholds"), "sql_compile_regression")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "modes"), "sql_compile_rate")),
                        "warn");
    /* the report's "sql" reads back as statistics */
    ps_vsql *back;
    ps_error err = {0};
    assert_int_equal(ps_vsql_from_json(sql, &back, &err), 0);
    assert_int_equal(back->regressions, 1);
    ps_vsql_free(back);
    char *html = ps_report_html(j);
    assert_non_null(html);
    assert_non_null(strstr(html, "<section id=\"sql\"><h2>SQL against its schema</h2>"));
    assert_non_null(strstr(html, "<a href=\"#sql\">SQL</a>"));
    assert_non_null(strstr(html, "no such table: a&lt;b&gt;&amp;&quot;c"));
    assert_null(strstr(html, "a<b>"));
    assert_non_null(strstr(html, "rename-alias"));
    assert_non_null(strstr(html, "no such column: T1.Name"));
    assert_non_null(strstr(html, "unrecognized token: &quot;!&quot;"));
    free(html);
    /* a report without "sql" has no such section */
    json_object_del(j, "sql");
    html = ps_report_html(j);
    assert_null(strstr(html, "id=\"sql\""));
    assert_null(strstr(html, "#sql"));
    free(html);
    /* hostile "sql" members render without crashing */
    json_t *odd[] = {json_null(), json_array(), json_string("<x>"), json_object(),
                     json_pack("{s[i]s{s[s]}s{ss}}", "classes", 3, "regressions", "by_rule", "x",
                               "execution", "executed", "all")};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        json_object_set_new(j, "sql", odd[i]);
        html = ps_report_html(j);
        assert_non_null(html);
        assert_null(strstr(html, "<x>"));
        free(html);
    }
    json_decref(j);
    free(text);
    ps_vreport_free(r);
    ps_vsql_free(v);
    sqlite3_close(db);
}

/* stats.json carries "sql" only when something was checked, and reads back. */
static void test_stats_file(void **state)
{
    (void)state;
    sqlite3 *db = spider_db();
    ps_vsql *v = whole(db), *none = ps_vsql_new(RULES, 3);
    char *with = ps_vstats_file_json(NULL, NULL, NULL, NULL, v, NULL),
         *without = ps_vstats_file_json(NULL, NULL, NULL, NULL, none, NULL),
         *plain = ps_vstats_file_json(NULL, NULL, NULL, NULL, NULL, NULL);
    assert_string_equal(without, plain);
    assert_null(strstr(plain, "\"sql\""));
    char dir[] = "/tmp/ps_vsql_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/stats.json", dir);
    ps_test_write_file(path, with);
    ps_vsql *back = NULL;
    ps_error err = {0};
    assert_int_equal(ps_vstats_file_load(path, NULL, NULL, NULL, NULL, &back, NULL, &err), 0);
    assert_non_null(back);
    assert_int_equal(back->c[PS_VSQL_CHECKED], 7);
    ps_vsql_free(back);
    ps_test_write_file(path, plain);
    back = (ps_vsql *)1;
    assert_int_equal(ps_vstats_file_load(path, NULL, NULL, NULL, NULL, &back, NULL, &err), 0);
    assert_null(back);
    /* a damaged "sql" is named */
    ps_test_write_file(path, "{\"stats_version\": 1, \"points\": {}, \"sql\": {\"rules\": []}}");
    assert_int_equal(ps_vstats_file_load(path, NULL, NULL, NULL, NULL, &back, NULL, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "sql:"));
    unlink(path);
    rmdir(dir);
    free(with), free(without), free(plain);
    ps_vsql_free(v), ps_vsql_free(none);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_json_round_trip_and_rejects),
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_stats_file),
    };
    return cmocka_run_group_tests_name("validate_sql", tests, NULL, NULL);
}
