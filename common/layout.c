/* The names of the set layouts (pairshard/common.h, ps_layout). */
#include "pairshard/common.h"

#include <string.h>

static const char *const layout_names[] = {"pair", "causal", "seq2seq"};

const char *ps_layout_name(int layout)
{
    if (layout < 0 || layout >= (int)(sizeof layout_names / sizeof *layout_names))
        return NULL;
    return layout_names[layout];
}

int ps_layout_parse(const char *name)
{
    for (int i = 0; name && i < (int)(sizeof layout_names / sizeof *layout_names); i++)
        if (strcmp(name, layout_names[i]) == 0)
            return i;
    return PS_EINVAL;
}
