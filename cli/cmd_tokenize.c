/* pairshard tokenize: cleaned JSONL records in, token ids out. */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/opt_error.h"
#include "cli/tok_args.h"
#include "common/outfile.h"
#include "common/ps_internal.h"
#include "pairshard/tokenizer.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: pairshard tokenize (--vocab FILE | --tokenizer-json FILE) [options] INPUT.jsonl\n"
    "                          [-o OUT.jsonl]\n"
    "\n"
    "Encodes each record written by 'pairshard clean' (JSONL objects with \"id\",\n"
    "\"question\", \"sql\") id for id as HuggingFace tokenizers 0.23.2 does and\n"
    "writes one line per record: {\"id\": ..., \"input_ids\": [...],\n"
    "\"token_type_ids\": [...]}. The pair (question, sql) goes through the\n"
    "tokenizer's post-processor: [CLS] question [SEP] sql [SEP] for BERT, the\n"
    "file's own template for a tokenizer.json.\n"
    "\n"
    "  --vocab FILE           BERT vocab.txt (one token a line). Lowercases (and\n"
    "                         strips accents) unless --no-lowercase, as for uncased\n"
    "                         BERT; use --no-lowercase for cased models (not for\n"
    "                         bert-base-chinese on SQL: its Latin part is lower-case)\n"
    "                         Signs of a damaged file (BOM, CRLF, duplicates,\n"
    "                         &lt;-style entries, missing [PAD]...) print a warning\n"
    "  --tokenizer-json FILE  a model's HuggingFace tokenizer.json: BPE (GPT-2,\n"
    "                         Llama, Qwen, DeepSeek...), Unigram (T5, mT5), WordPiece\n"
    "                         or WordLevel, with its normalizer, pre-tokenizer,\n"
    "                         added tokens and post-processor. A component\n"
    "                         pairshard does not implement is refused, naming its\n"
    "                         JSON path (docs/TOKENIZER.md lists what is supported)\n"
    "  --lowercase, --no-lowercase\n"
    "                         with --vocab: lowercase or not (default: lowercase)\n"
    "  --max-length N         truncate to N ids, special tokens included, with HF's\n"
    "                         longest_first strategy (default: no truncation)\n"
    "  --field question|sql   encode that field alone, as a single sequence\n"
    "                         ([CLS] field [SEP] for BERT)\n"
    "  --words                write the normalized, pre-tokenized words of the field\n"
    "                         (or of both fields, as \"question_words\"/\"sql_words\")\n"
    "                         instead of ids, for inspecting the normalizer\n"
    "  -o FILE                output (default '-': stdout); replaced whole when it\n"
    "                         exists (through a symlink: its target); a FIFO,\n"
    "                         /dev/null or /dev/fd/N is written into. It may not\n"
    "                         name the input or vocabulary, nor lie in a shard set\n"
    "  -h, --help             this help\n"
    "\n"
    "INPUT '-' reads stdin. A malformed line stops the run with FILE:LINE and the\n"
    "reason; nothing is written then.\n"
    "Exit status: 0 done, 2 usage or input error.\n";

enum { OPT_FIELD = PS_TOK_OPT_OWN, OPT_WORDS };

static const struct option LONGOPTS[] = {
    PS_TOK_SOURCE_LONGOPTS
    {"field", required_argument, NULL, OPT_FIELD},
    {"words", no_argument, NULL, OPT_WORDS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

typedef struct job {
    const ps_tokenizer *tok;
    ps_tok_scratch *scratch;
    size_t max_length;
    const char *field; /* NULL: the pair */
    int words;
    const char *in_name;
    const char *tok_name; /* the --vocab or --tokenizer-json file */
    size_t line_no;
    ps_buf out;
} job;

/* Returns 0, or -1 when out of memory. */
static int put_ints(ps_buf *b, const char *key, const int32_t *ids, const uint8_t *types, size_t n)
{
    int bad = ps_buf_printf(b, ", \"%s\": [", key) < 0;
    for (size_t i = 0; i < n && !bad; i++) {
        char num[16];
        int v = ids ? ids[i] : types[i];
        int k = snprintf(num, sizeof num, i ? ", %d" : "%d", v);
        bad = ps_buf_append(b, num, (size_t)k) < 0;
    }
    return bad || ps_buf_putc(b, ']') < 0 ? -1 : 0;
}

static int put_json_string(void *ctx, const char *s, size_t n)
{
    ps_buf *b = ctx;
    json_t *str = json_stringn(s, n);
    char *enc = str ? json_dumps(str, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    json_decref(str);
    if (!enc)
        return PS_ENOMEM;
    int bad = b->len && b->data[b->len - 1] != '[' && ps_buf_puts(b, ", ") < 0;
    bad = bad || ps_buf_puts(b, enc) < 0;
    free(enc);
    return bad ? PS_ENOMEM : 0;
}

/* What input_error and its callers return: a record that is not shaped as
 * clean writes them (tokenize's advice is then to run clean first), or any
 * other failure (an encode that failed, out of memory, a write), which
 * clean would not have prevented. */
enum { FAIL_OTHER = -1, FAIL_SHAPE = -2 };

static int input_error(const job *j, const char *fmt, ...) PS_PRINTF(2, 3);
static int input_error(const job *j, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pairshard tokenize: %s:%zu: ", j->in_name, j->line_no);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return FAIL_OTHER;
}

/* A field clean always writes is missing or of the wrong type. */
static int field_error(const job *j, const char *key, const char *what)
{
    input_error(j, "field '%s' %s", key, what);
    return FAIL_SHAPE;
}

static int get_text(const job *j, json_t *rec, const char *key, const char **s, size_t *n)
{
    json_t *v = json_object_get(rec, key);
    if (!v)
        return field_error(j, key, "is missing");
    if (!json_is_string(v))
        return field_error(j, key, "is not a string");
    *s = json_string_value(v);
    *n = json_string_length(v);
    return 0;
}

static int add_words(job *j, const char *key, const char *s, size_t n)
{
    ps_error err;
    if (ps_buf_printf(&j->out, ", \"%s\": [", key) < 0)
        return input_error(j, "%s", "out of memory");
    int rc = ps_tokenizer_words(j->tok, j->scratch, s, n, put_json_string, &j->out, &err);
    if (rc == PS_ENOMEM)
        return input_error(j, "%s", "out of memory");
    if (rc < 0)
        return input_error(j, "%s", err.message);
    if (ps_buf_putc(&j->out, ']') < 0)
        return input_error(j, "%s", "out of memory");
    return 0;
}

static int encode_record(job *j, json_t *rec)
{
    json_t *id = json_object_get(rec, "id");
    if (!id)
        return field_error(j, "id", "is missing");
    if (!json_is_string(id) && !json_is_integer(id))
        return field_error(j, "id", "is not a string");
    char *id_text = json_dumps(id, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
    if (!id_text)
        return input_error(j, "%s", "out of memory");
    ps_buf_reset(&j->out);
    int bad = ps_buf_printf(&j->out, "{\"id\": %s", id_text) < 0;
    free(id_text);
    if (bad)
        return input_error(j, "%s", "out of memory");

    const char *q = NULL, *sql = NULL;
    size_t qn = 0, sqln = 0;
    int rc;
    if ((!j->field || !strcmp(j->field, "question")) &&
        (rc = get_text(j, rec, "question", &q, &qn)))
        return rc;
    if ((!j->field || !strcmp(j->field, "sql")) && (rc = get_text(j, rec, "sql", &sql, &sqln)))
        return rc;
    if (j->words) {
        if (q && add_words(j, sql ? "question_words" : "words", q, qn))
            return -1;
        if (sql && add_words(j, q ? "sql_words" : "words", sql, sqln))
            return -1;
    } else {
        ps_error err;
        ps_encoding enc;
        rc = q && sql ? ps_tokenizer_encode_pair(j->tok, j->scratch, q, qn, sql, sqln,
                                                 j->max_length, &enc, &err)
             : q      ? ps_tokenizer_encode(j->tok, j->scratch, q, qn, j->max_length, &enc, &err)
                      : ps_tokenizer_encode(j->tok, j->scratch, sql, sqln, j->max_length, &enc,
                                            &err);
        if (rc < 0)
            return input_error(j, "encoding with %s failed: %s", j->tok_name, err.message);
        if (put_ints(&j->out, "input_ids", enc.input_ids, NULL, enc.len) ||
            put_ints(&j->out, "token_type_ids", NULL, enc.token_type_ids, enc.len))
            return input_error(j, "%s", "out of memory");
    }
    if (ps_buf_puts(&j->out, "}\n") < 0)
        return input_error(j, "%s", "out of memory");
    return 0;
}

/* Input that is not clean's output (a raw JSON array such as Spider's, a
 * line that is not a JSON object, or records without clean's fields) fails
 * on its first record: say what tokenize reads and what to run first. Only
 * then: a record clean could have written that fails to encode (a
 * vocabulary without [SEP], a full disk) gets its own reason alone. */
static void hint_clean_first(const job *j)
{
    fprintf(stderr,
            "pairshard tokenize: %s is not 'pairshard clean' output: tokenize reads the JSON "
            "lines clean writes (one object a line with id, question and sql); run "
            "'pairshard clean %s -o clean.jsonl' first, then tokenize clean.jsonl\n",
            strcmp(j->in_name, "-") ? j->in_name : "the input",
            strcmp(j->in_name, "-") ? j->in_name : "INPUT");
}

static int run(job *j, FILE *in, ps_outfile *outf)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    bool first = true;
    while (!rc && (n = getline(&line, &cap, in)) >= 0) {
        j->line_no++;
        size_t len = (size_t)n;
        size_t k = strspn(line, " \t\r\n");
        if (k == len)
            continue; /* blank line */
        if (first && line[k] == '[') {
            input_error(j, "%s", "a JSON array, not JSON lines");
            hint_clean_first(j);
            rc = -1;
            break;
        }
        json_error_t jerr;
        json_t *rec = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
        if (!rec || !json_is_object(rec)) {
            input_error(j, "not a JSON object%s%s", rec ? "" : ": ", rec ? "" : jerr.text);
            rc = FAIL_SHAPE;
        } else if (!(rc = encode_record(j, rec))) {
            ps_error err;
            if (j->out.len != 0 && ps_outfile_write(outf, j->out.data, j->out.len, &err)) {
                fprintf(stderr, "pairshard tokenize: %s\n", err.message);
                rc = -1;
            }
        }
        json_decref(rec);
        if (rc == FAIL_SHAPE && first)
            hint_clean_first(j);
        first = false;
    }
    if (!rc && ferror(in)) {
        fprintf(stderr, "pairshard tokenize: %s: read error\n", j->in_name);
        rc = -1;
    }
    free(line);
    return rc;
}

int ps_cmd_tokenize(int argc, char **argv)
{
    ps_tok_source src = {NULL, NULL, -1};
    job j;
    memset(&j, 0, sizeof j);
    const char *out_path = "-";
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "o:h", LONGOPTS, NULL)) != -1) {
        int shared = ps_tok_source_option("tokenize", &src, &j.max_length, c, optarg);
        if (shared < 0)
            return PS_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case OPT_FIELD: {
            static const ps_args_choice fields[] = {{"question", 0}, {"sql", 1}};
            int f;
            if (ps_args_enum("tokenize", "field", optarg, fields, 2, &f))
                return PS_EXIT_USAGE;
            j.field = fields[f].name;
            break;
        }
        case OPT_WORDS: j.words = 1; break;
        case 'o': out_path = optarg; break;
        case 'h': fputs(USAGE, stdout); return PS_EXIT_OK;
        default: ps_opt_error("tokenize", c, argv, LONGOPTS); return PS_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs("pairshard tokenize: give exactly one INPUT (or '-')\n", stderr);
        return PS_EXIT_USAGE;
    }
    size_t min_len = j.field ? 2 : 3;
    if (j.max_length && j.max_length < min_len) {
        fprintf(stderr, "pairshard tokenize: --max-length must be at least %zu (the special tokens)\n",
                min_len);
        return PS_EXIT_USAGE;
    }
    j.in_name = argv[optind];
    ps_error err;
    const ps_path_use outs[] = {{"-o", out_path}};
    const ps_path_use ins[] = {
        {"input", j.in_name}, {"--vocab file", src.vocab}, {"--tokenizer-json file", src.tokenizer_json}};
    if (ps_outputs_check(outs, 1, ins, 3, &err)) {
        fprintf(stderr, "pairshard tokenize: %s\n", err.message);
        return PS_EXIT_USAGE;
    }
    FILE *in = strcmp(j.in_name, "-") ? fopen(j.in_name, "rb") : stdin;
    if (!in) {
        fprintf(stderr, "pairshard tokenize: %s: %s\n", j.in_name, strerror(errno));
        return PS_EXIT_USAGE;
    }
    ps_tokenizer *tok = NULL;
    int status = PS_EXIT_USAGE;
    ps_outfile out = {0};
    if (ps_tok_source_load("tokenize", &src, &tok))
        goto done;
    j.tok = tok;
    j.tok_name = src.vocab ? src.vocab : src.tokenizer_json;
    j.scratch = ps_tok_scratch_new();
    ps_buf_init(&j.out);
    if (!j.scratch) {
        fputs("pairshard tokenize: out of memory\n", stderr);
        goto done;
    }
    if (ps_outfile_open(&out, out_path, &err)) {
        fprintf(stderr, "pairshard tokenize: %s\n", err.message);
        goto done;
    }
    if (run(&j, in, &out)) {
        ps_outfile_abort(&out);
        goto done;
    }
    if (ps_outfile_commit(&out, &err)) {
        fprintf(stderr, "pairshard tokenize: %s\n", err.message);
        goto done;
    }
    status = PS_EXIT_OK;
done:
    ps_buf_free(&j.out);
    ps_tok_scratch_free(j.scratch);
    ps_tokenizer_free(tok);
    if (in != stdin)
        fclose(in);
    return status;
}
