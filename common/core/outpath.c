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

#define MAX_DIRS 4

typedef struct input_dir {
    char option[64];
    char *path, *real; /* as given; its realpath */
    pb_outpath_reads_fn reads;
} input_dir;

static input_dir dirs[MAX_DIRS];
static int ndirs;

static void drop(int i)
{
    free(paths[i].path);
    free(paths[i].resolved);
    paths[i] = paths[--npaths];
}

void pb_outpath_reset(void)
{
    while (npaths > 0) drop(npaths - 1);
    for (; ndirs > 0; ndirs--) {
        free(dirs[ndirs - 1].path);
        free(dirs[ndirs - 1].real);
    }
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

/* Whether output `e` is a file input directory `d` reads: its resolved
 * directory (or, for an existing file, its real location) is d's and its
 * base name is one d's reader takes. */
static int read_there(const input_dir *d, const entry *e)
{
    char real[PATH_MAX];
    const char *where[2] = {e->resolved, e->exists && realpath(e->path, real) ? real : NULL};
    size_t n = strlen(d->real);
    for (int k = 0; k < 2; k++) {
        const char *w = where[k];
        if (!w || strncmp(w, d->real, n) != 0 || w[n] != '/' || strchr(w + n + 1, '/')) continue;
        if (d->reads(w + n + 1)) return 1;
    }
    return 0;
}

static int refuse_read(const input_dir *d, const char *option, const char *path)
{
    return pb_error_usage(option, "'%s' is a file %s '%s' reads; writing it would destroy an input, expected a "
                                  "file it does not read", path, d->option, d->path);
}

/* Whether directory `dir` is a run's results folder: it holds meta.json or steps.tsv. */
static int is_run(const char *dir)
{
    char f[PATH_MAX];
    struct stat st;
    for (int k = 0; k < 2; k++) {
        int n = snprintf(f, sizeof f, "%s/%s", dir, k ? "steps.tsv" : "meta.json");
        if (n > 0 && (size_t)n < sizeof f && lstat(f, &st) == 0) return 1;
    }
    return 0;
}

/* The run folder that `file` (an absolute path) lies in, copied to run; 0 when none. */
static int enclosing_run(const char *file, char *run, size_t len)
{
    snprintf(run, len, "%s", file);
    for (char *slash = strrchr(run, '/'); slash; slash = strrchr(run, '/')) {
        slash[slash == run] = '\0'; /* "/a" leaves "/" */
        if (is_run(run)) return 1;
        if (slash == run) return 0;
    }
    return 0;
}

/* A run's records are its own: an output inside a run folder is refused unless the
 * run's driver started this program for it (PARABENCH_RUN names the folder), and
 * never meta.json or steps.tsv, which only the driver writes. */
static int refuse_run_record(const char *option, const entry *e)
{
    char real[PATH_MAX], run[PATH_MAX], own[PATH_MAX];
    const char *where = e->exists && realpath(e->path, real) ? real : e->resolved;
    if (!enclosing_run(where, run, sizeof run)) return PB_OK;
    const char *base = strrchr(where, '/') + 1;
    const char *owner = getenv("PARABENCH_RUN");
    int record = strcmp(base, "meta.json") == 0 || strcmp(base, "steps.tsv") == 0;
    if (!record && owner && realpath(owner, own) && strcmp(own, run) == 0) return PB_OK;
    return pb_error_usage(option, "'%s' is inside the results folder of a run, '%s' (it holds meta.json or "
                                  "steps.tsv); a run's records are never replaced, expected a file outside it",
                          e->path, run);
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
    int refused = input ? PB_OK : refuse_run_record(option, &e);
    if (refused != PB_OK) {
        free(e.resolved);
        return refused;
    }
    for (int i = 0; i < npaths; i++) {
        if ((input && paths[i].input) || !same_file(&e, &paths[i])) continue;
        free(e.resolved);
        return pb_error_usage(option, "'%s' is the same file as %s '%s'; one would destroy the other, expected "
                                      "different files", path, paths[i].option, paths[i].path);
    }
    for (int i = 0; !input && i < ndirs; i++) {
        if (!read_there(&dirs[i], &e)) continue;
        free(e.resolved);
        return refuse_read(&dirs[i], option, path);
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

int pb_outpath_add_input_dir(const char *option, const char *dir, pb_outpath_reads_fn reads)
{
    char real[PATH_MAX];
    struct stat st;
    if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || !realpath(dir, real))
        return pb_error_usage(option, "'%s' is not a directory; expected a results directory", dir ? dir : "");
    if (!is_run(real))
        return pb_error_usage(option, "'%s' is not a run's results folder (no meta.json or steps.tsv); expected "
                                      "the --out of run_all.sh", dir);
    if (ndirs == MAX_DIRS) return pb_error_usage(option, "too many directories; at most %d per run", MAX_DIRS);
    input_dir d = {.path = strdup(dir), .real = strdup(strcmp(real, "/") == 0 ? "" : real), .reads = reads};
    snprintf(d.option, sizeof d.option, "%s", option);
    if (!d.path || !d.real) {
        free(d.path);
        free(d.real);
        return pb_fail(PB_ERR_ENV, "out of memory for %s", option);
    }
    for (int i = 0; i < npaths; i++) {
        if (paths[i].input || !read_there(&d, &paths[i])) continue;
        int rc = refuse_read(&d, paths[i].option, paths[i].path);
        free(d.path);
        free(d.real);
        return rc;
    }
    dirs[ndirs++] = d;
    return PB_OK;
}
