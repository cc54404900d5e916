#include "core/outpath.h"

#include "core/error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PATHS 32

typedef struct entry {
    char option[64];
    char *path;     /* as given */
    char *resolved; /* realpath of the directory + "/" + base name */
    int exists, input;
    dev_t dev;
    ino_t ino;
} entry;

static entry paths[MAX_PATHS];
static int npaths;

static void drop(int i)
{
    free(paths[i].path);
    free(paths[i].resolved);
    paths[i] = paths[--npaths];
}

void pb_outpath_reset(void)
{
    while (npaths > 0) drop(npaths - 1);
}

/* The directory part of `path` ("." when none) in `dir`; returns the base name. */
static const char *split(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, len, ".");
        return path;
    }
    snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return slash + 1;
}

/* The directory must exist and take new files; else exit 3 (environment). */
static int resolve(const char *option, const char *path, int input, char **resolved)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base = split(path, dir, sizeof dir);
    if (!realpath(dir, real)) {
        if (input) return pb_fail(PB_ERR_ENV, "%s %s: directory %s: %s", option, path, dir, strerror(errno));
        return pb_fail(PB_ERR_ENV, "%s %s: cannot open for writing: directory %s: %s", option, path, dir, strerror(errno));
    }
    if (!input && access(real, W_OK | X_OK) != 0)
        return pb_fail(PB_ERR_ENV, "%s %s: cannot open for writing: directory %s: %s", option, path, dir, strerror(errno));
    size_t len = strlen(real) + strlen(base) + 2;
    *resolved = malloc(len);
    PB_CHECK(*resolved, PB_ERR_ENV, "out of memory for %s", option);
    snprintf(*resolved, len, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
    return PB_OK;
}

static int same_file(const entry *a, const entry *b)
{
    if (strcmp(a->path, b->path) == 0 || strcmp(a->resolved, b->resolved) == 0) return 1;
    return a->exists && b->exists && a->dev == b->dev && a->ino == b->ino;
}

static int add(const char *option, const char *path, int input)
{
    if (!path || !*path) return pb_error_usage(option, "empty file name");
    size_t n = strlen(path);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (path[n - 1] == '/' || (exists && S_ISDIR(st.st_mode)))
        return pb_error_usage(option, "%s: is a directory; expected a file name", path);
    for (int i = 0; i < npaths; i++)
        if (strcmp(paths[i].option, option) == 0) drop(i--); /* the last value of an option wins */
    entry e = {.path = (char *)path, .exists = exists, .input = input, .dev = exists ? st.st_dev : 0,
               .ino = exists ? st.st_ino : 0}; /* path borrowed until stored */
    snprintf(e.option, sizeof e.option, "%s", option);
    PB_TRY(resolve(option, path, input, &e.resolved));
    for (int i = 0; i < npaths; i++) {
        if ((input && paths[i].input) || !same_file(&e, &paths[i])) continue;
        free(e.resolved);
        return pb_error_usage(option, "'%s' is the same file as %s '%s'; one would destroy the other, expected "
                                      "different files", path, paths[i].option, paths[i].path);
    }
    if (npaths == MAX_PATHS) {
        free(e.resolved);
        return pb_error_usage(option, "too many files; at most %d per run", MAX_PATHS);
    }
    e.path = strdup(path);
    if (!e.path) {
        free(e.resolved);
        return pb_fail(PB_ERR_ENV, "out of memory for %s", option);
    }
    paths[npaths++] = e;
    return PB_OK;
}

int pb_outpath_add(const char *option, const char *path)
{
    return add(option, path, 0);
}

int pb_outpath_add_input(const char *option, const char *path)
{
    return add(option, path, 1);
}
