/*
 * report/report.h — rendering a validation report for people and programs:
 * report.json, the terminal summary and report.html (internal interface;
 * the build, merge and `pairshard validate` use it). The statistics and
 * checks it renders live one layer below, in validate/.
 */
#ifndef PS_REPORT_H
#define PS_REPORT_H

#include "validate/validate.h"

/* report.json's text (malloc'ed). */
char *ps_vreport_json(const ps_vreport *r);
/* A short terminal summary (malloc'ed): the verdict and every check that
 * did not pass, one line each. */
char *ps_vreport_summary(const ps_vreport *r);
/* report.html: one self-contained page (inline SVG, no scripts), built
 * from the report JSON object. Returns malloc'ed text or NULL. */
char *ps_report_html(json_t *report);

#endif /* PS_REPORT_H */
