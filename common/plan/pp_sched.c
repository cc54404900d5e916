#include "plan/pp_sched.h"

#include "core/error.h"

#include <string.h>

static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved", NULL};

const char *const *pb_pp_sched_names(void) { return sched_names; }

const char *pb_pp_sched_name(pb_pp_sched s) { return s < PB_PP_SCHED_COUNT ? sched_names[s] : "?"; }

int pb_pp_sched_parse(const char *option, const char *name, pb_pp_sched *out)
{
    for (int i = 0; sched_names[i]; i++)
        if (strcmp(name, sched_names[i]) == 0) {
            *out = (pb_pp_sched)i;
            return PB_OK;
        }
    return pb_error_usage(option, "'%s' is not a schedule; expected gpipe, 1f1b or interleaved", name);
}
