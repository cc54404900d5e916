#include "core/version.h"

#include <stdio.h>
#include <string.h>

char *pb_version_format(char *buf, size_t len, const char *version, const char *git_rev)
{
    if (git_rev && git_rev[0] && strcmp(git_rev, "unknown") != 0)
        snprintf(buf, len, "parabench %s (git %s)", version, git_rev);
    else
        snprintf(buf, len, "parabench %s", version);
    return buf;
}

const char *pb_version_number(void)
{
    return PB_VERSION;
}

const char *pb_version_git_rev(void)
{
    return PB_GIT_REV;
}

const char *pb_version_string(void)
{
    static char text[128];
    if (!text[0]) pb_version_format(text, sizeof text, PB_VERSION, PB_GIT_REV);
    return text;
}
