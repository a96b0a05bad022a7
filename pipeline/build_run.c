/*
 * ps_build_run: sets the build up (cleaner, staging directory, spools),
 * runs both phases, writes the manifest and publishes the set. Also the
 * spooling of kept records and the label registry.
 */
#define _GNU_SOURCE /* fwrite_unlocked */
#include "pipeline/build_internal.h"
#include "common/outfile.h"
#include "pipeline/beside.h"
#include "pipeline/preprocess_int.h"
#include "report/report.h"

#include <jansson.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The first-seen index of the label numbered `no` in the accounting (or
 * PS_LABEL_NO_NONE), registering it when new: its string is compared once,
 * when first seen here; after that the number finds it. */
static int label_index(ps_build_state *st, const char *label, uint32_t no, uint32_t *out)
{
    bool added;
    long i = ps_strmap_add_numbered(&st->labels, label, no == PS_LABEL_NO_NONE ? 0 : no + 1,
                                    &added);
    if (i < 0)
        return PS_ENOMEM;
    if (i >= (long)PS_LABEL_NONE)
        return PS_ELIMIT;
    *out = (uint32_t)i;
    return 0;
}

int ps_spool_record_put(ps_buf *arena, const char *id, const int32_t *ids, uint32_t n,
                        uint32_t type_boundary, size_t *off)
{
    uint32_t idlen = (uint32_t)strlen(id);
    uint64_t bytes = ps_spool_ids_offset(idlen) + (uint64_t)n * sizeof *ids;
    if (bytes > UINT32_MAX)
        return PS_ELIMIT;
    size_t at = (arena->len + 3) & ~(size_t)3;
    if (ps_buf_reserve(arena, at - arena->len + (size_t)bytes))
        return PS_ENOMEM;
    char *p = arena->data + at;
    memset(arena->data + arena->len, 0, at - arena->len); /* alignment */
    uint32_t head[4] = {n, type_boundary, PS_LABEL_NONE, idlen}; /* the index holds the label */
    memcpy(p, head, sizeof head);
    memcpy(p + sizeof head, id, idlen);
    memset(p + sizeof head + idlen, 0, ps_spool_ids_offset(idlen) - sizeof head - idlen);
    memcpy(p + ps_spool_ids_offset(idlen), ids, (size_t)n * sizeof *ids);
    arena->len = at + (size_t)bytes;
    *off = at;
    return 0;
}

int ps_build_spool(ps_build_state *st, const ps_clean_result *r, uint32_t label_no, uint32_t n,
                   size_t spool, uint64_t offset, ps_error *err)
{
    uint32_t label = PS_LABEL_NONE;
    if (r->label) {
        int rc = label_index(st, r->label, label_no, &label);
        if (rc)
            return ps_error_set(err, rc, "%s: too many labels", r->source);
    }
    if (!st->hist || n > st->hist_max) {
        size_t old = st->hist ? st->hist_max + 1 : 0;
        uint64_t *nh = realloc(st->hist, (n + 1) * sizeof *nh);
        if (!nh)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        memset(nh + old, 0, (n + 1 - old) * sizeof *nh);
        st->hist = nh;
        st->hist_max = n;
    }
    st->hist[n]++;
    ps_spool *sp = &st->spools[st->kept++ % st->cfg->shards];
    ps_spool_entry e = {n, label, (uint64_t)spool << PS_SPOOL_OFFSET_BITS | offset};
    if (ps_spool_push(sp, &e))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

int ps_spool_push(ps_spool *sp, const ps_spool_entry *e)
{
    size_t seg = (size_t)(sp->records >> PS_SPOOL_SEG_BITS);
    if (seg == sp->n_segs) {
        if (sp->n_segs == sp->cap_segs) {
            size_t nc = sp->cap_segs ? 2 * sp->cap_segs : 16;
            ps_spool_entry **grown = realloc(sp->segs, nc * sizeof *grown);
            if (!grown)
                return PS_ENOMEM;
            sp->segs = grown;
            sp->cap_segs = nc;
        }
        if (!(sp->segs[seg] = malloc(PS_SPOOL_SEG * sizeof **sp->segs)))
            return PS_ENOMEM;
        sp->n_segs++;
    }
    sp->segs[seg][sp->records & (PS_SPOOL_SEG - 1)] = *e;
    sp->records++;
    return 0;
}

void ps_spool_free(ps_spool *sp)
{
    for (size_t i = 0; i < sp->n_segs; i++)
        free(sp->segs[i]);
    free(sp->segs);
    memset(sp, 0, sizeof *sp);
}

int ps_wspool_append(ps_wspool *ws, const void *p, size_t n, uint64_t *offset, ps_error *err)
{
    if (ws->size + n >= (uint64_t)1 << PS_SPOOL_OFFSET_BITS)
        return ps_error_set(err, PS_ELIMIT, "%s: a spool over %llu bytes", ws->path,
                            1ull << PS_SPOOL_OFFSET_BITS);
    int e = ps_fd_write_all(ws->fd, p, n);
    if (e)
        return ps_error_set(err, PS_EIO, "%s: write failed: %s", ws->path, strerror(e));
    *offset = ws->size;
    ws->size += n;
    return 0;
}

/* *path: "DIR/NAME", malloc'ed. */
static int join_path(const char *dir, const char *name, char **path, ps_error *err)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    *path = malloc(n);
    if (!*path)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    snprintf(*path, n, "%s/%s", dir, name);
    return 0;
}

/* Opens worker spool i in the staging directory. */
static int wspool_open(ps_build_state *st, size_t i, ps_error *err)
{
    ps_wspool *ws = &st->wspools[i];
    char name[48];
    snprintf(name, sizeof name, ".spool-%05zu", i);
    int rc = join_path(st->staging, name, &ws->path, err);
    if (rc)
        return rc;
    ws->fd = open(ws->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600); /* read: mapped */
    if (ws->fd < 0)
        return ps_error_set(err, PS_EIO, "%s: cannot create: %s", ws->path, strerror(errno));
    return 0;
}

/* Closes the worker spools and maps them for phase 2. */
static int wspools_map(ps_build_state *st, ps_error *err)
{
    for (size_t i = 0; i < st->n_wspools; i++) {
        ps_wspool *ws = &st->wspools[i];
        int fd = ws->fd;
        ws->fd = -1;
        void *m = ws->size ? mmap(NULL, ws->size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
        int closed = close(fd);
        if (m == MAP_FAILED)
            return ps_error_set(err, PS_EIO, "%s: cannot map: %s", ws->path, strerror(errno));
        ws->data = m;
        if (closed)
            return ps_error_set(err, PS_EIO, "%s: close failed: %s", ws->path, strerror(errno));
        /* Mapped, the file needs no name: without one it is never part of
         * the published set, however late its pages are freed. */
        if (unlink(ws->path) == 0) {
            free(ws->path);
            ws->path = NULL;
        }
    }
    return 0;
}

void ps_build_wspools_free(ps_build_state *st)
{
    for (size_t i = 0; st->wspools && i < st->n_wspools; i++) {
        ps_wspool *ws = &st->wspools[i];
        if (ws->data)
            munmap((void *)ws->data, ws->size);
        if (ws->fd >= 0)
            close(ws->fd);
        if (ws->path)
            unlink(ws->path);
        free(ws->path);
    }
    free(st->wspools);
    st->wspools = NULL;
}

static int open_in(const char *dir, const char *name, FILE **f, char **path, ps_error *err)
{
    int rc = join_path(dir, name, path, err);
    if (rc)
        return rc;
    *f = fopen(*path, "wb");
    if (!*f)
        return ps_error_set(err, PS_EIO, "%s: cannot create: %s", *path, strerror(errno));
    setvbuf(*f, NULL, _IOFBF, 1 << 20);
    return 0;
}

static int close_checked(FILE **f, const char *what, ps_error *err)
{
    if (!*f)
        return 0;
    int e = fflush(*f) != 0 || ferror(*f) ? (errno ? errno : EIO) : 0;
    if (fclose(*f) != 0 && !e)
        e = errno;
    *f = NULL;
    return e ? ps_error_set(err, PS_EIO, "%s: write failed: %s", what, strerror(e)) : 0;
}

static int check_config(const ps_build_config *cfg, ps_error *err)
{
    for (size_t k = 0; k < cfg->n_sources; k++) { /* each source as a build of its own */
        ps_build_config one = *cfg;
        one.sources = NULL;
        one.n_sources = 0;
        one.tmpl = cfg->sources[k].tmpl;
        one.schemas = cfg->sources[k].schemas;
        one.clean = cfg->sources[k].clean;
        int rc = check_config(&one, err);
        if (rc)
            return ps_error_source(err, rc, cfg->sources[k].name);
    }
    if (!cfg->out_dir || !cfg->tokenizer || cfg->n_inputs == 0)
        return ps_error_set(err, PS_EUSAGE, "build needs inputs, a tokenizer and an output");
    if (cfg->shards < 1 || cfg->shards > 100000)
        return ps_error_set(err, PS_EUSAGE, "shards must be between 1 and 100000");
    if (cfg->threads < 1 || cfg->threads > 1024)
        return ps_error_set(err, PS_EUSAGE, "threads must be between 1 and 1024");
    if (cfg->block_records < 1 || cfg->block_records > (1u << 20))
        return ps_error_set(err, PS_EUSAGE, "block records must be between 1 and 1048576");
    if (cfg->max_length == 1 || cfg->max_length == 2)
        return ps_error_set(err, PS_EUSAGE, "max length must be 0 (none) or at least 3");
    if (cfg->part_count && cfg->part_index >= cfg->part_count)
        return ps_error_set(err, PS_EUSAGE, "--part K/N needs 0 <= K < N");
    if (cfg->n_buckets == 0 && (cfg->auto_buckets < 1 || cfg->auto_buckets > PS_BUILD_MAX_BUCKETS))
        return ps_error_set(err, PS_EUSAGE, "automatic buckets: between 1 and %d",
                            PS_BUILD_MAX_BUCKETS);
    for (size_t i = 0; i < cfg->n_buckets; i++)
        if (cfg->buckets[i] == 0 || (i && cfg->buckets[i] <= cfg->buckets[i - 1]))
            return ps_error_set(err, PS_EUSAGE, "bucket bounds must be positive and increasing");
    if (!ps_layout_name(cfg->layout))
        return ps_error_set(err, PS_EUSAGE, "unknown layout %d", cfg->layout);
    ps_template_info ti = {0};
    if (cfg->tmpl)
        ps_template_get_info(cfg->tmpl, &ti);
    if (cfg->layout != PS_LAYOUT_PAIR && cfg->tmpl && !ti.completion) /* nothing to learn */
        return ps_error_set(err, PS_EUSAGE,
                            "--layout %s needs a completion, and the template %s has none",
                            ps_layout_name(cfg->layout), ti.name);
    if (cfg->max_prompt_length && (!cfg->max_length || cfg->max_prompt_length > cfg->max_length))
        return ps_error_set(err, PS_EUSAGE,
                            "--max-prompt-length %zu must be at most --max-length (%zu)",
                            cfg->max_prompt_length, cfg->max_length);
    int end = ps_build_check_end(cfg, err);
    if (end)
        return end;
    if (cfg->max_target_length && cfg->layout != PS_LAYOUT_SEQ2SEQ)
        return ps_error_set(err, PS_EUSAGE,
                            "--max-target-length is for --layout seq2seq (this build is %s)",
                            ps_layout_name(cfg->layout));
    /* a seq2seq record holds a source of up to max_length and a target */
    size_t max_total = cfg->max_length;
    if (cfg->layout == PS_LAYOUT_SEQ2SEQ && cfg->max_length)
        max_total += cfg->max_target_length ? cfg->max_target_length : cfg->max_length;
    if (cfg->n_buckets && cfg->max_length && cfg->buckets[cfg->n_buckets - 1] < max_total)
        return ps_error_set(err, PS_EUSAGE,
                            "the last bucket bound (%u) must be >= max length (%zu%s)",
                            cfg->buckets[cfg->n_buckets - 1], max_total,
                            max_total > cfg->max_length ? ": a seq2seq record's source and "
                                                          "target together" : "");
    /* Every worker's spool stays open through phase 1: refuse up front
     * what would fail with EMFILE half-way. */
    struct rlimit rl;
    size_t need = cfg->threads + PS_BUILD_FDS_BESIDE_SPOOLS;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)need > rl.rlim_cur)
        return ps_error_set(err, PS_ELIMIT,
                            "--threads %zu needs about %zu open files, above this process's "
                            "limit of %llu (ulimit -n): raise the limit or use fewer threads",
                            cfg->threads, need, (unsigned long long)rl.rlim_cur);
    return 0;
}

int ps_build_cancelled(const ps_build_config *cfg, ps_error *err)
{
    if (!cfg->cancel || !*cfg->cancel)
        return 0;
    return ps_error_set(err, PS_ECANCELED, "%s: cancelled; nothing was published",
                        cfg->out_dir);
}

/* Hashes every input file for the manifest; runs beside phase 1, which
 * reads the same files (the second read hits the page cache). Not stdin,
 * nor a pipe or FIFO (`<(zcat x)`): reading one here would take records
 * away from phase 1; such an input has no sha256 in the manifest. Then
 * what else of the manifest depends on the configuration alone: the
 * tokenizer file's hash and DIR/preprocess/ (ps_build_embed_preprocess),
 * which used to be written after phase 2, on the serial path, where its
 * fsync also waited behind the shards' writeback (Spider x20 at 2 threads:
 * 3.9 ms, 0.75 ms at 1). */
static void *hash_inputs(void *arg)
{
    ps_build_state *st = arg;
    const ps_build_config *cfg = st->cfg;
    for (size_t i = 0; i < cfg->n_inputs && !st->input_hash_rc; i++) {
        struct stat sb;
        if (strcmp(cfg->inputs[i], "-") != 0 && stat(cfg->inputs[i], &sb) == 0 &&
            S_ISREG(sb.st_mode))
            st->input_hash_rc = ps_sha256_file(cfg->inputs[i], st->input_sha[i],
                                               &st->input_bytes[i], &st->input_hash_err);
    }
    if (cfg->vocab_path)
        st->vocab_hash_rc = ps_sha256_file(cfg->vocab_path, st->vocab_sha, NULL,
                                           &st->vocab_hash_err);
    st->preprocess = ps_build_embed_preprocess(cfg, st->staging, &st->preprocess_err);
    return NULL;
}

static void state_free(ps_build_state *st)
{
    if (st->leak_x)
        ps_encode_ctx_free(st->leak_x);
    free(st->leak_x);
    ps_build_release_join(&st->validation_release);
    ps_build_release_join(&st->spools_release);
    free(st->kept_summary);
    json_decref(st->preprocess);
    free(st->input_sha);
    free(st->input_bytes);
    if (st->rejects)
        fclose(st->rejects);
    if (st->duplicates)
        fclose(st->duplicates);
    free(st->rejects_path);
    free(st->duplicates_path);
    for (size_t i = 0; st->spools && i < st->cfg->shards; i++)
        ps_spool_free(&st->spools[i]);
    free(st->spools);
    ps_build_wspools_free(st);
    ps_strmap_free(&st->labels);
    free(st->sorted_labels);
    free(st->label_final);
    free(st->hist);
    free(st->results);
    ps_build_sources_free(st);
    ps_cleaner_free(st->cleaner);
    ps_build_validation_free(st);
}

int ps_build_validate(const void *validate_json, ps_vstats *raw, ps_vstats *cleaned,
                      ps_vstats *tokenized, const ps_vpaired *paired, const ps_vsql *sql,
                      const uint32_t *bounds, size_t n_bounds, size_t threads, bool slice,
                      const ps_vgen_checks *gen, ps_vreport **report, ps_error *err)
{
    ps_vconfig *vc = ps_vconfig_new();
    if (!vc)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    ps_vconfig_set_threads(vc, threads);
    ps_vconfig_set_slice(vc, slice);
    int rc = validate_json ? ps_vconfig_apply_json(vc, (json_t *)validate_json, err) : 0;
    if (!rc)
        rc = ps_vstats_set_padding(tokenized, bounds, n_bounds);
    if (!rc)
        rc = ps_validate_build(vc, raw, cleaned, tokenized, paired, report, err);
    if (!rc)
        rc = ps_validate_sql(vc, sql, *report, err);
    if (!rc && gen)
        rc = ps_validate_gen(vc, gen, *report, err);
    ps_vconfig_free(vc);
    return rc;
}

int ps_write_reports(const char *dir, const char *prefix, const ps_vreport *report,
                     const ps_vsql *sql, const ps_vgen *gen, double *threaded, ps_error *err)
{
    json_t *o = ps_vreport_object(report);
    char *json = NULL, *stats = NULL;
    if (o) /* NULLs when out of memory, told below */
        (void)ps_vreport_texts(report, o, sql, gen, &json, &stats, threaded);
    char *html = json ? ps_report_html(o) : NULL; /* after the text: it reads the object */
    json_decref(o);
    int rc = 0;
    if (!json || !html || !stats)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory writing the report");
    const char *names[3] = {"report.json", "report.html", "stats.json"};
    const char *texts[3] = {json, html, stats};
    for (int i = 0; !rc && i < 3; i++) {
        char name[600];
        snprintf(name, sizeof name, "%s%s", prefix, names[i]);
        /* beside DIR (prefix "DIR."): an ordinary output file, not part of a set;
         * in the set, fsynced with the set's other files when it is published */
        rc = (*prefix ? ps_beside_write : ps_write_set_file)(dir, name, texts[i],
                                                             strlen(texts[i]), err);
    }
    free(json);
    free(html);
    free(stats);
    return rc;
}

/* Copies `from` into the output file `to` (a symlink's target, a FIFO,
 * a device), through ps_outfile so that what `to` names is never replaced. */
static int copy_into_output(const char *from, const char *to, ps_error *err)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return ps_error_set(err, PS_EIO, "%s: cannot read the rejects: %s", from, strerror(errno));
    ps_outfile o;
    int rc = ps_outfile_open(&o, to, err);
    char buf[1 << 16];
    size_t n;
    while (!rc && (n = fread(buf, 1, sizeof buf, in)) > 0)
        rc = ps_outfile_write(&o, buf, n, err);
    if (!rc && ferror(in))
        rc = ps_error_set(err, PS_EIO, "%s: read failed", from);
    fclose(in);
    if (!rc)
        rc = ps_outfile_commit(&o, err);
    ps_outfile_abort(&o);
    return rc;
}

/* Moves the staging set's rejects.jsonl (closed) beside DIR as
 * "<DIR>.rejects.jsonl", fsynced, when the gate stops the build. A plain
 * file (or none) there is replaced by rename; a symlink, FIFO or device is
 * written through, as every output file is (common/outfile.h). */
static int move_rejects_beside(const char *staging, const char *parent, const char *prefix,
                               ps_error *err)
{
    char from[4096], to[4096];
    if (snprintf(from, sizeof from, "%s/rejects.jsonl", staging) >= (int)sizeof from ||
        snprintf(to, sizeof to, "%s/%srejects.jsonl", parent, prefix) >= (int)sizeof to)
        return ps_error_set(err, PS_EIO, "%s: path too long", staging);
    struct stat sb;
    if (lstat(to, &sb) == 0 && !S_ISREG(sb.st_mode))
        return copy_into_output(from, to, err);
    int fd = open(from, O_RDONLY | O_CLOEXEC);
    int bad = fd < 0 || fsync(fd) != 0;
    if (fd >= 0)
        close(fd);
    if (bad || rename(from, to) != 0)
        return ps_error_set(err, PS_EIO, "%s: cannot write the rejects: %s", to, strerror(errno));
    return 0;
}

static double cpu_seconds(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The summary the CLI prints; `dir`/`prefix` locate the report. Its
 * times but the phases' are close_profile's, once the state is freed.
 * Returns the instant the publish share ends, where the teardown starts:
 * one reading of the clock, so that the phases add up to the wall time
 * exactly, however long the thread waits between here and the teardown. */
static double fill_summary(ps_build_state *st, ps_build_summary *sum, const char *dir,
                           const char *prefix)
{
    ps_build_release_join(&st->validation_release); /* it clears st->report */
    memset(sum, 0, sizeof *sum);
    ps_cleaner_get_counts(st->cleaner, &sum->counts);
    for (size_t i = 0; st->results && i < st->cfg->shards; i++) {
        sum->tokens += st->results[i].tokens;
        sum->bytes_on_disk += st->results[i].bytes;
    }
    sum->n_buckets = st->n_bounds;
    memcpy(sum->buckets, st->bounds, sizeof st->bounds);
    sum->n_labels = st->labels.n;
    /* the report, or what was kept of it when it was freed early */
    snprintf(sum->verdict, sizeof sum->verdict, "%s",
             st->report ? ps_vreport_verdict(st->report) : st->kept_verdict);
    if (snprintf(sum->report_path, sizeof sum->report_path, "%s/%sreport.json", dir, prefix) >=
        (int)sizeof sum->report_path)
        sum->report_path[0] = '\0';
    sum->report_summary = st->report ? ps_vreport_summary(st->report) : st->kept_summary;
    if (!st->report)
        st->kept_summary = NULL; /* the summary's now */
    double share = ps_build_serving_share(st->cfg->validate_json);
    char *note = ps_build_serving_note(st->cleaner, share);
    size_t n = sum->report_summary ? strlen(sum->report_summary) : 0;
    char *joined = note && sum->report_summary ? realloc(sum->report_summary, n + strlen(note) + 1)
                                               : NULL;
    if (joined) {
        strcpy(joined + n, note);
        sum->report_summary = joined;
    }
    free(note);
    sum->profile = st->prof;
    ps_build_profile *pf = &sum->profile;
    /* what the phases did not cover: the manifest and publishing */
    double now = ps_build_now();
    pf->publish = now - st->start - pf->setup - pf->phase1 - pf->checks - pf->phase2;
    if (pf->publish < 0)
        pf->publish = 0;
    return now;
}

/* The summary's wall time and the profile's teardown, CPU seconds and
 * serial share, once the state is freed (finish, from `teardown_from`):
 * the freeing is the caller's wait too. */
static void close_profile(const ps_build_state *st, ps_build_summary *sum,
                          double teardown_from)
{
    double now = ps_build_now();
    ps_build_profile *pf = &sum->profile;
    sum->seconds = now - st->start;
    pf->wall = sum->seconds;
    pf->teardown = now - teardown_from;
    pf->cpu_calling = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - st->cpu_thread0;
    pf->cpu_process = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - st->cpu_process0;
    /* phase 2's compression is shared by the threads, and with several
     * shard writers their grouping, storing, finishing and hashing too */
    double writers = (double)(pf->phase2_writers ? pf->phase2_writers : 1);
    double writing = pf->phase2_sort + pf->phase2_put + pf->phase2_finish;
    double shared = pf->phase1 - pf->read - pf->commit + pf->checks_threaded +
                    pf->reports_threaded +
                    pf->phase2_encode / (double)(pf->workers ? pf->workers : 1) +
                    writing * (1.0 - 1.0 / writers);
    pf->serial = pf->wall - shared;
    pf->serial_fraction = pf->wall > 0 ? pf->serial / pf->wall : 0;
}


ps_vsql *ps_build_vsql_new(const ps_cleaner *c)
{
    /* the SQL statistics name the cleaning rules behind a regression */
    const ps_rules *rules = ps_cleaner_rules(c);
    size_t nrules = ps_rules_count(rules);
    const char **names = calloc(nrules + 1, sizeof *names);
    for (size_t i = 0; names && i < nrules; i++)
        names[i] = ps_rules_name(rules, i);
    ps_vsql *v = names ? ps_vsql_new(names, nrules) : NULL;
    free(names);
    return v;
}

/* Opens what phase 1 writes into the staging directory: rejects,
 * duplicates and one spool per worker; and the statistics. */
static int open_outputs(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    int rc = open_in(st->staging, "rejects.jsonl", &st->rejects, &st->rejects_path, err);
    if (!rc)
        rc = open_in(st->staging, "duplicates.jsonl", &st->duplicates, &st->duplicates_path, err);
    if (!rc) {
        st->v_raw = ps_vstats_new("raw");
        st->v_clean = ps_vstats_new("cleaned");
        st->v_tok = ps_vstats_new("tokenized");
        st->paired = ps_vpaired_new(20);
        st->v_sql = ps_build_vsql_new(st->cleaner);
        if (cfg->layout != PS_LAYOUT_PAIR)
            st->v_gen = ps_vgen_new();
        if (!st->v_raw || !st->v_clean || !st->v_tok || !st->paired || !st->v_sql ||
            (cfg->layout != PS_LAYOUT_PAIR && !st->v_gen))
            rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    st->spools = rc ? NULL : calloc(cfg->shards, sizeof *st->spools);
    st->wspools = rc ? NULL : calloc(cfg->threads, sizeof *st->wspools);
    if (!rc && (!st->spools || !st->wspools))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < cfg->threads; i++) {
        st->wspools[i].fd = -1;
        st->n_wspools = i + 1;
        rc = wspool_open(st, i, err);
    }
    return rc;
}

/* Phase 1 with the inputs hashed beside it, then the spools mapped. */
static int run_phase1(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    pthread_t hasher;
    bool hashing = false;
    int rc = 0;
    st->input_sha = calloc(cfg->n_inputs, sizeof *st->input_sha);
    st->input_bytes = calloc(cfg->n_inputs, sizeof *st->input_bytes);
    if (!st->input_sha || !st->input_bytes)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    else if (ps_thread_create(&hasher, hash_inputs, st, "ps-hash") == 0)
        hashing = true;
    else
        hash_inputs(st);
    if (!rc)
        rc = ps_build_phase1(st, err);
    if (hashing)
        pthread_join(hasher, NULL);
    if (!rc) /* a field named but in no record of an input: a usage error */
        rc = ps_cleaner_check_fields(st->cleaner, NULL, err);
    if (!rc)
        rc = ps_build_sources_check_fields(st, err);
    if (!rc)
        rc = close_checked(&st->rejects, st->rejects_path, err);
    if (!rc)
        rc = close_checked(&st->duplicates, st->duplicates_path, err);
    if (!rc)
        rc = wspools_map(st, err);
    return rc;
}

/* The checks on the statistics (the gate) and what the report adds:
 * vocabulary warnings, the serving note, the prompt/completion lengths.
 * *gate_failed: the verdict is "fail" and the gate is on. */
static int run_checks(ps_build_state *st, bool *gate_failed, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    *gate_failed = false;
    ps_vgen_checks gc = {st->v_gen, cfg->layout == PS_LAYOUT_CAUSAL,
                         cfg->clean.turns_path != NULL, st->history_turns,
                         st->history_hidden};
    int rc = ps_build_validate(cfg->validate_json, st->v_raw, st->v_clean, st->v_tok, st->paired,
                               st->v_sql, st->bounds, st->n_bounds, cfg->threads,
                               cfg->part_count > 1, &gc, &st->report, err);
    for (size_t i = 0; !rc && i < ps_tokenizer_warning_count(cfg->tokenizer); i++)
        if (ps_vreport_add_vocab_warning(st->report, ps_tokenizer_warning(cfg->tokenizer, i)))
            rc = ps_error_set(err, PS_ENOMEM, "out of memory writing the report");
    if (!rc && ps_build_serving_report(st->cleaner, ps_build_serving_share(cfg->validate_json),
                                       st->report))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory writing the report");
    if (!rc && st->v_gen && ps_vreport_set_generation(st->report, st->v_gen))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory writing the report");
    if (!rc)
        rc = ps_build_leak_report(st, err);
    if (!rc && st->n_src) /* a mixture: every check per source too */
        rc = ps_build_sources_validate(st, err);
    *gate_failed = !rc && strcmp(ps_vreport_verdict(st->report), "fail") == 0 && !cfg->no_gate;
    return rc;
}

/* The checks, then the reports into the set when the gate passes, on a
 * thread beside phase 2: they only read the statistics, which phase 2
 * does not touch. A failed gate stops phase 2 (ps_build_stopping). */
typedef struct checks_job {
    ps_build_state *st;
    bool gate_failed;
    int rc;
    ps_error err;
} checks_job;

static void *checks_main(void *arg)
{
    checks_job *j = arg;
    ps_build_state *st = j->st;
    j->rc = run_checks(st, &j->gate_failed, &j->err);
    if (j->rc || j->gate_failed)
        __atomic_store_n(&st->stop_phase2, 1, __ATOMIC_RELEASE);
    else
        j->rc = ps_write_reports(st->staging, "", st->report, st->v_sql, st->v_gen, NULL,
                                 &j->err);
    if (!j->rc && !j->gate_failed) /* beside phase 2 already: freed here */
        ps_build_release_validation(st);
    return NULL;
}

int ps_build_stopping(ps_build_state *st, ps_error *err)
{
    if (__atomic_load_n(&st->stop_phase2, __ATOMIC_ACQUIRE))
        return ps_error_set(err, PS_ECANCELED, "%s: the checks stopped the build",
                            st->cfg->out_dir);
    return ps_build_cancelled(st->cfg, err);
}

/* The checks and phase 2: with more than one thread at once (the checks
 * and reports on a thread of their own), else one after the other, the
 * reports written before phase 2 and phase 2 skipped when the gate fails.
 * A failed gate wins over phase 2's outcome, whose work is discarded. */
static int checks_and_phase2(ps_build_state *st, bool *gate_failed, double t, ps_error *err)
{
    checks_job j = {st, false, 0, {0}};
    pthread_t th;
    bool beside = st->cfg->threads > 1 && ps_thread_create(&th, checks_main, &j, "ps-checks") == 0;
    int rc = 0;
    if (!beside) {
        rc = run_checks(st, gate_failed, err);
        if (!rc && !*gate_failed)
            rc = ps_write_reports(st->staging, "", st->report, st->v_sql, st->v_gen,
                                  &st->prof.reports_threaded, err);
        /* beside phase 2 the checks are not on the calling thread's path */
        st->prof.checks_threaded = ps_vreport_threaded_seconds(st->report);
        if (!rc && !*gate_failed) /* the reports are in the set: freed beside phase 2 */
            ps_build_release_start(&st->validation_release, ps_build_release_validation, st);
    }
    st->prof.checks = ps_build_now() - t;
    t = ps_build_now();
    if (!rc && (beside || !*gate_failed))
        rc = ps_build_phase2(st, err);
    if (beside) {
        pthread_join(th, NULL);
        *gate_failed = j.gate_failed;
        if (j.rc) {
            *err = j.err;
            rc = j.rc;
        } else if (j.gate_failed && !(st->cfg->cancel && *st->cfg->cancel)) {
            rc = 0; /* phase 2 stopped, or done for nothing: the gate decides */
        }
    }
    st->prof.phase2 = ps_build_now() - t;
    return rc;
}

/* Frees the state, closing every file first (under EMFILE the staging
 * directory cannot be listed while they are open), then removes the
 * staging directory: on failure with the partial set, after publication
 * with the previous one. */
static void finish(ps_build_state *st)
{
    state_free(st);
    ps_staging_discard(&st->stg);
}

/* The gate failed: the reports and the rejects (which explain a failed
 * check as much as the report) go beside DIR, and nothing is published. */
static int gate_stopped(ps_build_state *st, ps_build_summary *summary, ps_error *err)
{
    char parent[4096], prefix[512] = "";
    ps_path_beside(st->cfg->out_dir, parent, sizeof parent, prefix, sizeof prefix);
    int rc = ps_write_reports(parent, prefix, st->report, st->v_sql, st->v_gen, NULL, err);
    if (!rc)
        rc = move_rejects_beside(st->staging, parent, prefix, err);
    double t = ps_build_now();
    if (!rc && summary) {
        t = fill_summary(st, summary, parent, prefix);
        summary->gate_failed = 1;
    }
    finish(st);
    if (!rc && summary)
        close_profile(st, summary, t);
    return rc;
}

int ps_build_run(const ps_build_config *cfg, ps_build_summary *summary, ps_error *err)
{
    int rc = check_config(cfg, err);
    if (rc)
        return rc;
    ps_build_state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    st.stg.lock_fd = -1;
    st.start = st.last_progress = ps_build_now();
    st.cpu_thread0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    st.cpu_process0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        struct stat sb;
        if (strcmp(cfg->inputs[i], "-") != 0 && stat(cfg->inputs[i], &sb) == 0)
            st.total_input_bytes += (uint64_t)sb.st_size;
    }
    ps_publish_opts pub = {cfg->inputs, cfg->n_inputs, cfg->force, cfg->cancel};
    rc = ps_cleaner_create(&cfg->clean, &st.cleaner, err);
    if (!rc && cfg->part_count) /* a part commits its share of the records */
        ps_cleaner_set_expect_share(st.cleaner, cfg->part_count);
    if (!rc)
        rc = ps_cleaner_declare_inputs(st.cleaner, cfg->inputs, cfg->n_inputs, err);
    if (!rc && cfg->rules_path)
        rc = ps_cleaner_load_rules(st.cleaner, cfg->rules_path, err);
    if (!rc && cfg->schemas)
        rc = ps_cleaner_set_schemas(st.cleaner, cfg->schemas, err);
    if (!rc && cfg->tmpl)
        rc = ps_cleaner_set_template(st.cleaner, cfg->tmpl, err);
    if (!rc && cfg->leak && !cfg->schemas && !cfg->tmpl) /* the database kind needs db_id */
        rc = ps_cleaner_read_database(st.cleaner, err);
    if (!rc) /* a mixture: a cleaner and statistics a source */
        rc = ps_build_sources_setup(&st, err);
    st.exec_db = cfg->clean.execute;
    for (size_t k = 0; k < cfg->n_sources; k++) /* a source's records without: "not run" */
        st.exec_db = st.exec_db || cfg->sources[k].clean.execute;
    if (!rc && cfg->difficulty_field)
        rc = ps_cleaner_set_difficulty_field(st.cleaner, cfg->difficulty_field, err);
    if (!rc) /* stopped during the set-up: touch nothing */
        rc = ps_build_cancelled(cfg, err);
    if (!rc)
        rc = ps_staging_create(cfg->out_dir, &pub, &st.stg, err);
    st.staging = st.stg.set;
    if (!rc)
        rc = open_outputs(&st, err);
    double t = ps_build_now();
    st.prof.setup = t - st.start;
    if (!rc)
        rc = run_phase1(&st, err);
    st.prof.phase1 = ps_build_now() - t;
    t = ps_build_now();
    if (!rc)
        rc = ps_build_cancelled(cfg, err);
    if (!rc)
        rc = ps_build_plan(&st, err);
    bool gate_failed = false;
    if (!rc)
        rc = checks_and_phase2(&st, &gate_failed, t, err);
    if (!rc && gate_failed) /* publish nothing; the reports and rejects go beside DIR */
        return gate_stopped(&st, summary, err);
    char *manifest = rc ? NULL : ps_build_manifest(&st, err);
    if (!rc && !manifest)
        rc = err && err->code ? err->code : PS_ENOMEM;
    /* The spools have no names any more (wspools_map): their release runs
     * on through publication and is joined at the end (state_free). */
    if (!rc)
        rc = ps_write_set_file(st.staging, "manifest.json", manifest, strlen(manifest), err);
    free(manifest);
    if (!rc)
        rc = ps_staging_publish(&st.stg, cfg->out_dir, &pub, err);
    t = !rc && summary ? fill_summary(&st, summary, cfg->out_dir, "") : ps_build_now();
    finish(&st);
    if (!rc && summary)
        close_profile(&st, summary, t);
    return rc;
}
