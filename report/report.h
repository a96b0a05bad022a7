/*
 * report/report.h — rendering a validation report for people and programs:
 * report.json, the terminal summary and report.html (internal interface;
 * the build, merge and `pairshard validate` use it). The statistics and
 * checks it renders live one layer below, in validate/.
 */
#ifndef PS_REPORT_H
#define PS_REPORT_H

#include "validate/leakage.h"
#include "validate/validate.h"

/* report.json's text (malloc'ed). */
char *ps_vreport_json(const ps_vreport *r);
/* The same in two steps, for a caller that also renders report.html from
 * the object (without parsing the text back): the object (a new
 * reference, NULL when out of memory) and its text as report.json holds
 * it (malloc'ed). */
json_t *ps_vreport_object(const ps_vreport *r);
char *ps_vreport_text(const json_t *report);
/* A short terminal summary (malloc'ed): the verdict and every check that
 * did not pass, one line each. */
char *ps_vreport_summary(const ps_vreport *r);
/* The leakage check's summary for the terminal (malloc'ed, one screen):
 * the held-out sets, per kind the training records found, their share,
 * the limit and the verdict, an example of the first failing (else found)
 * kind, and what was dropped (drop_mask: bit k, --drop-leaked). Lines start
 * with `cmd` ("pairshard build"). NULL when out of memory. */
char *ps_leak_summary(const char *cmd, const ps_leak_tally *t, const ps_leak_limits *l,
                      unsigned drop_mask);
/* report.html: one self-contained page (inline SVG, no scripts), built
 * from the report JSON object. Returns malloc'ed text or NULL. */
char *ps_report_html(json_t *report);
/* stats.json's text (ps_vstats_file_json) for the statistics a build
 * report `r` was made from (ps_validate_build), reusing the points and
 * the paired view the report already holds instead of serialising them
 * again: the same bytes. malloc'ed; NULL when out of memory. */
char *ps_vstats_file_json_report(const ps_vreport *r, const ps_vsql *sql, const ps_vgen *gen);
/* Both texts at once, report.json's from `report` (ps_vreport_object(r))
 * and stats.json's as ps_vstats_file_json_report gives it: the points and
 * the paired view, most of both files, are serialised once for the two,
 * their per-label entries on the report's threads (ps_report_dump_labels;
 * *threaded, when not NULL, gains the seconds that work took).
 * PS_OK, or PS_ENOMEM (both NULL). The texts are malloc'ed. */
int ps_vreport_texts(const ps_vreport *r, const json_t *report, const ps_vsql *sql,
                     const ps_vgen *gen, char **report_json, char **stats_json,
                     double *threaded);
/* json_dumps(m, flags) of a statistics member (a point, the paired view):
 * its "labels" array's elements are dumped on up to `threads` threads and
 * joined as json_dumps joins them, so the text is the same bytes. Adds the
 * seconds the elements took (work divided among the threads) to *seconds
 * when it is not NULL. malloc'ed; NULL when out of memory. */
char *ps_report_dump_labels(const json_t *m, size_t flags, size_t threads, double *seconds);

#endif /* PS_REPORT_H */
