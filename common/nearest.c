/* Nearest-name suggestions (see nearest.h). */
#include "common/nearest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

size_t ps_edit_distance_nocase(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    size_t *row = malloc((nb + 1) * sizeof *row);
    if (!row)
        return na > nb ? na : nb; /* no memory: as far apart as can be */
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
            size_t best = diag + (same ? 0 : 1);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    size_t d = row[nb];
    free(row);
    return d;
}

/* `word` is an abbreviation of `name`: same first letter, and its letters
 * appear in `name` in order ("db_id" of "database_id"), without case. */
static int abbreviates(const char *word, const char *name)
{
    if (!*word || tolower((unsigned char)*word) != tolower((unsigned char)*name))
        return 0;
    for (; *name && *word; name++)
        if (tolower((unsigned char)*name) == tolower((unsigned char)*word))
            word++;
    return *word == '\0';
}

const char *ps_nearest_name(const char *word, const char *const *names, size_t n)
{
    size_t len = strlen(word);
    size_t limit = len / 3 > 2 ? len / 3 : 2;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || strcmp(names[i], word) == 0)
            continue;
        size_t d = ps_edit_distance_nocase(word, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    if (best && best_d <= limit && best_d < len)
        return best;
    /* Too far to be a typo: perhaps an abbreviation; the shortest wins. */
    best = NULL;
    for (size_t i = 0; len >= 2 && i < n; i++)
        if (names[i] && abbreviates(word, names[i]) && (!best || strlen(names[i]) < strlen(best)))
            best = names[i];
    return best;
}
