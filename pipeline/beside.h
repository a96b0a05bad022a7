/*
 * The files a build or merge stopped by the validation gate writes beside
 * DIR (DIR.report.json, DIR.report.html, DIR.stats.json): outside any set,
 * so they are ordinary output files (common/outfile.h), checked before the
 * build reads anything and written whole or not at all.
 */
#ifndef PS_SHARDS_BESIDE_H
#define PS_SHARDS_BESIDE_H

#include "common/outfile.h"

/* ps_outputs_check() of the three files beside `out_dir` against `ins`
 * (the inputs, rules and vocabulary). 0, or PS_EUSAGE/PS_ENOMEM. */
int ps_beside_outputs_check(const char *out_dir, const ps_path_use *ins, size_t n_ins,
                            ps_error *err);

/* Writes dir/name as an output file (ps_outfile_write_all). */
int ps_beside_write(const char *dir, const char *name, const char *data, size_t len,
                    ps_error *err);

#endif
