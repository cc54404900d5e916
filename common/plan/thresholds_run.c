/* Acceptance rules judged on a results folder (plan/thresholds_run.h). */
#include "plan/thresholds_run.h"

#include "core/error.h"
#include "core/grow.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "<source>*.csv", matched literally: never a glob, since the folder may hold
 * *, ? or [ in its name. */
static int source_file(const char *name, const char *source)
{
    size_t n = strlen(name), k = strlen(source);
    return n >= k + 4 && strncmp(name, source, k) == 0 && strcmp(name + n - 4, ".csv") == 0;
}

int pb_thresholds_run_reads(const char *name)
{
    const pb_thresholds_metric *m = pb_thresholds_metrics();
    for (int i = 0; m[i].name; i++)
        if (source_file(name, m[i].source)) return 1;
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The regular files "<source>*.csv" in dir, sorted; NULL-terminated, malloc'ed. */
static char **list_sources(const char *dir, const char *source, int *n, pb_thresholds_eval_outcome *o)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        pb_thresholds_eval_distrust(o, "cannot read the results directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    char **names = NULL;
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!source_file(e->d_name, source)) continue;
        char **g = pb_grow(names, &cap, *n + 1, sizeof *g, 8);
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = g ? malloc(len) : NULL;
        if (g) names = g;
        if (!path) {
            pb_thresholds_eval_distrust(o, "out of memory listing %s", dir);
            break;
        }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        names[(*n)++] = path;
        names[*n] = NULL;
    }
    closedir(d);
    if (*n) qsort(names, (size_t)*n, sizeof *names, by_name);
    return names;
}

/* Read each file with the metric's column; one cut short, garbled or
 * unreadable makes the rule untrusted (the rest are still read, for the table). */
static pb_thresholds_eval_table *load_tables(const pb_thresholds_metric *m, char **paths, int n, int *ntab,
                                             pb_thresholds_eval_outcome *o)
{
    pb_thresholds_eval_table *tabs = calloc((size_t)(n ? n : 1), sizeof *tabs);
    *ntab = 0;
    for (int i = 0; i < n; i++) {
        pb_thresholds_eval_table *tb = &tabs[*ntab];
        int st = tabs ? pb_csv_read(paths[i], &tb->csv) : PB_ERR_ENV;
        if (st == PB_ERR_ENV)
            pb_thresholds_eval_distrust(o, "cannot read %s: %s", paths[i], tabs ? strerror(errno) : "out of memory");
        else if (st != PB_OK && tb->csv.bad_line)
            pb_thresholds_eval_distrust(o, "%s:%d: garbled: %s", paths[i], tb->csv.bad_line, tb->csv.bad_why);
        else if (st != PB_OK)
            pb_thresholds_eval_distrust(o, "%s:1: no header line (the file is empty or was cut short)", paths[i]);
        if (st != PB_OK || pb_csv_col(&tb->csv, m->column) < 0) {
            if (st == PB_OK) pb_csv_free(&tb->csv);
            continue;
        }
        if (tb->csv.bad_line)
            pb_thresholds_eval_distrust(o, "%s:%d: garbled row: %s", paths[i], tb->csv.bad_line, tb->csv.bad_why);
        else if (!tb->csv.complete)
            pb_thresholds_eval_distrust(o, "%s:%d: incomplete: no '# complete' line (the run was cut short)", paths[i],
                                        tb->csv.nlines);
        tb->path = paths[i];
        if (pb_result_notes_read(paths[i], m->source, &tb->notes) != PB_OK)
            pb_thresholds_eval_distrust(o, "out of memory reading %s", paths[i]);
        (*ntab)++;
    }
    return tabs;
}

void pb_thresholds_run_load(pb_thresholds_run *t, const pb_thresholds_metric *metric, const char *dir,
                            pb_thresholds_eval_outcome *o)
{
    t->paths = list_sources(dir, metric->source, &t->npaths, o);
    t->tabs = load_tables(metric, t->paths, t->npaths, &t->ntab, o);
}

void pb_thresholds_run_free(pb_thresholds_run *t)
{
    for (int i = 0; i < t->ntab; i++) pb_csv_free(&t->tabs[i].csv), pb_result_notes_free(&t->tabs[i].notes);
    for (int i = 0; i < t->npaths; i++) free(t->paths[i]);
    free(t->paths);
    free(t->tabs);
    *t = (pb_thresholds_run){0};
}

pb_thresholds_eval_outcome pb_thresholds_run_judge(const pb_thresholds_rule *r, const char *dir, char *from, size_t len)
{
    pb_thresholds_eval_outcome o;
    pb_thresholds_eval_start(&o);
    pb_thresholds_run t;
    pb_thresholds_run_load(&t, r->metric, dir, &o);
    pb_thresholds_eval(r, t.tabs, t.ntab, &o);
    if (from) snprintf(from, len, "%s", o.from_table >= 0 ? t.tabs[o.from_table].path : "");
    pb_thresholds_run_free(&t);
    return o;
}
