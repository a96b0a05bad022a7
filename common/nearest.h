/*
 * Did-you-mean: the name nearest to a misspelt one, for messages about a
 * field no record has or a config key no option has.
 */
#ifndef PS_COMMON_NEAREST_H
#define PS_COMMON_NEAREST_H

#include <stddef.h>

/* Levenshtein distance between a and b, ASCII letters compared without
 * case ("SQL" and "sql" are at distance 0). */
size_t ps_edit_distance_nocase(const char *a, const char *b);

/* The name among names[0..n) nearest to `word`, or NULL when none is near
 * enough to be a plausible misspelling (distance at most a third of the
 * word's length, and at least 2 allowed; ties go to the earlier name) or
 * spelt out from it as an abbreviation ("db_id" of "database_id": same
 * first letter, its letters in order; the shortest such name). NULL
 * entries are skipped. */
const char *ps_nearest_name(const char *word, const char *const *names, size_t n);

#endif
