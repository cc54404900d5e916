#include "core/report.h"

#include "core/atomic.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/timing.h"

#include <math.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pb_report {
    const pb_report_column *cols;
    int ncols;
    FILE *table, *csv;
    char *json_path, *csv_path;
    char csv_tmp[4096];
    int published; /* the CSV is in place and the JSON written: after the first row, or at a complete close */
    int csv_failed; /* a CSV write failed (a full disk): nothing more is written to it */
    long csv_good;  /* bytes of the CSV known written, whole lines: a failed write is cut back to it */
    cJSON *root, *rows, *summary, *notes;
    long changes, changes_at_write; /* rows, notes and summaries added, in all and at the last JSON write */
    int notes_lost;                 /* notes that out of memory cut from an output: the run is not complete */
    double written_us;              /* when the JSON was last written */
};

/* The JSON is rewritten whole (a temporary file renamed over it, so it is
 * always a valid document), but not after every change: only once the changes
 * have doubled since the last write, or a second has passed. The total work
 * stays linear in the rows, and the file lags the CSV (flushed per row) by at
 * most a second or half its rows; pb_report_close writes the final state. */
#define JSON_REWRITE_US 1e6

static int json_changed(pb_report *r)
{
    r->changes++;
    if (!r->json_path || !r->published) return PB_OK;
    if (r->changes < 2 * r->changes_at_write && pb_timing_now_us() - r->written_us < JSON_REWRITE_US) return PB_OK;
    r->changes_at_write = r->changes;
    r->written_us = pb_timing_now_us();
    return pb_report_json_write_atomic(r->json_path, r->root);
}

int pb_report_json_write_atomic(const char *path, const cJSON *json)
{
    char tmp[4096];
    /* cJSON copies a string's bytes: invalid UTF-8 (from an argument, a
     * hostname) would make the file invalid JSON, so it becomes U+FFFD. */
    char *raw = cJSON_Print(json);
    char *text = raw ? pb_escape_utf8(raw) : NULL;
    free(raw);
    PB_CHECK(text, PB_ERR_ENV, "out of memory printing JSON for %s", path);
    FILE *f = pb_atomic_open(path, tmp, sizeof tmp);
    if (!f) {
        free(text);
        return PB_ERR_ENV;
    }
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    free(text);
    return pb_atomic_commit(f, tmp, path, ok);
}

/* "# key: value", one line whatever the value holds (a newline in an
 * argument must not end the comment and start a row). 0, or -1 when out of
 * memory cut the line short. */
static int csv_comment(FILE *csv, const char *key, const char *value)
{
    fputs("# ", csv);
    int cut = pb_escape_fputs(csv, pb_escape_csv_comment, key) != 0;
    fputs(": ", csv);
    cut |= pb_escape_fputs(csv, pb_escape_csv_comment, value) != 0;
    fputc('\n', csv);
    return cut ? -1 : 0;
}

static void csv_meta(FILE *csv, const cJSON *meta)
{
    char num[32];
    for (const cJSON *m = meta ? meta->child : NULL; m; m = m->next) {
        if (cJSON_IsString(m)) csv_comment(csv, m->string, m->valuestring);
        else if (cJSON_IsNumber(m)) snprintf(num, sizeof num, "%.17g", m->valuedouble), csv_comment(csv, m->string, num);
        else {
            char *t = cJSON_PrintUnformatted(m);
            if (t) csv_comment(csv, m->string, t);
            free(t);
        }
    }
}

static const char *type_name(pb_report_col_type t)
{
    switch (t) {
    case PB_COL_INT: return "int";
    case PB_COL_FLOAT: return "float";
    case PB_COL_STR: return "string";
    }
    return "unset";
}

/* The schema: what each row key means, so a reader needs no copy of it. */
static int add_schema(cJSON *root, const pb_report_column *cols, int ncols)
{
    cJSON *schema = cJSON_AddArrayToObject(root, "columns");
    for (int c = 0; c < ncols; c++) {
        PB_CHECK(cols[c].key, PB_ERR_CHECK, "report: column %d has no key (missing from the column table)", c);
        cJSON *col = cJSON_CreateObject();
        cJSON_AddStringToObject(col, "key", cols[c].key);
        cJSON_AddStringToObject(col, "unit", cols[c].unit ? cols[c].unit : "");
        cJSON_AddStringToObject(col, "type", type_name(cols[c].type));
        cJSON_AddItemToArray(schema, col);
    }
    return PB_OK;
}

int pb_report_open(const char *benchmark, const pb_report_column *cols, int ncols, cJSON *meta, FILE *table,
                   const char *csv_path, const char *json_path, pb_report **out)
{
    pb_report *r = calloc(1, sizeof *r);
    PB_CHECK(r, PB_ERR_ENV, "out of memory for the report");
    r->cols = cols;
    r->ncols = ncols;
    r->table = table;
    r->root = cJSON_CreateObject();
    cJSON_AddStringToObject(r->root, "benchmark", benchmark);
    cJSON_AddBoolToObject(r->root, "complete", 0);
    if (meta) cJSON_AddItemToObject(r->root, "meta", meta);
    *out = r;
    PB_TRY(add_schema(r->root, cols, ncols));
    r->rows = cJSON_AddArrayToObject(r->root, "rows");
    r->summary = cJSON_AddObjectToObject(r->root, "summary");
    r->notes = cJSON_AddArrayToObject(r->root, "notes");
    if (csv_path) {
        r->csv = pb_atomic_open(csv_path, r->csv_tmp, sizeof r->csv_tmp);
        r->csv_path = r->csv ? strdup(csv_path) : NULL;
        if (!r->csv_path) return pb_fail(PB_ERR_ENV, "--csv %s: cannot open for writing", csv_path);
        fputs("# parabench ", r->csv);
        pb_escape_fputs(r->csv, pb_escape_csv_comment, benchmark);
        fputc('\n', r->csv);
        csv_meta(r->csv, meta);
        for (int c = 0; c < ncols; c++) fprintf(r->csv, "%s%s", c ? "," : "", cols[c].key);
        fputc('\n', r->csv);
        fflush(r->csv);
    }
    if (json_path) {
        r->json_path = strdup(json_path);
        PB_CHECK(r->json_path, PB_ERR_ENV, "out of memory for the report");
    }
    return PB_OK;
}

static int csv_ok(const pb_report *r) { return r->csv && !r->csv_failed; }

/* Flush the CSV's whole lines. A failed write (a full disk) must not leave
 * half a row: what stdio still holds is dropped and the file is cut back to
 * its last whole line (before publishing, the temporary is removed at close
 * and the old file stays), and nothing more is written to it. */
static int csv_flush(pb_report *r)
{
    if (!r->csv) return PB_OK;
    if (r->csv_failed) return PB_ERR_ENV;
    if (fflush(r->csv) == 0 && !ferror(r->csv)) {
        r->csv_good = ftell(r->csv);
        return PB_OK;
    }
    int err = errno;
    r->csv_failed = 1;
    __fpurge(r->csv);
    if (r->csv_tmp[0] && ftruncate(fileno(r->csv), r->csv_good) != 0) err = errno; /* a device is not cut */
    return pb_fail(PB_ERR_ENV, "--csv %s: cannot write: %s", r->csv_path ? r->csv_path : r->csv_tmp, strerror(err));
}

/* Put the outputs in place: the CSV's temporary renamed over the old file,
 * and from then on the JSON written (json_changed). Until then a run refused by a later check (memory, an
 * allocation) leaves the files of the previous run as they were. From here
 * on the CSV is appended and flushed row by row at its own name. */
static int publish(pb_report *r)
{
    if (r->published) return PB_OK;
    PB_TRY(csv_flush(r)); /* the header on disk first: a full disk keeps the old file, not an empty one */
    if (r->csv && pb_atomic_rename(r->csv_tmp, r->csv_path) != 0)
        return pb_fail(PB_ERR_ENV, "--csv %s: cannot write: %m", r->csv_path);
    r->published = 1;
    return PB_OK;
}

void pb_report_header(pb_report *r)
{
    if (!r || !r->table) return;
    for (int line = 0; line < 2; line++) {
        fputc('#', r->table);
        for (int c = 0; c < r->ncols; c++) {
            const pb_report_column *col = &r->cols[c];
            if (!col->title) continue;
            const char *text = line == 0 ? col->title : (col->subtitle ? col->subtitle : "");
            fprintf(r->table, " %*s", col->width, text);
        }
        fputc('\n', r->table);
    }
    fflush(r->table);
}

static void table_cell(FILE *f, const pb_report_column *col, const pb_report_value *v)
{
    switch (col->type) {
    case PB_COL_INT: fprintf(f, " %*lld", col->width, v->i); break;
    case PB_COL_FLOAT:
        if (isnan(v->f)) fprintf(f, " %*s", col->width, "-");
        else fprintf(f, " %*.*f", col->width, col->precision, v->f);
        break;
    case PB_COL_STR: fprintf(f, " %*s", col->width, v->s ? v->s : ""); break;
    }
}

/* The shortest of 15 or 17 significant digits that reads back as the same
 * double, as cJSON writes the JSON: the CSV holds the values the JSON does. */
static void csv_float(FILE *f, double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", x);
    if (strtod(buf, NULL) != x) snprintf(buf, sizeof buf, "%.17g", x);
    fputs(buf, f);
}

static void csv_cell(FILE *f, const pb_report_column *col, const pb_report_value *v)
{
    switch (col->type) {
    case PB_COL_INT: fprintf(f, "%lld", v->i); break;
    case PB_COL_FLOAT:
        if (!isnan(v->f)) csv_float(f, v->f);
        break;
    case PB_COL_STR: pb_escape_fputs(f, pb_escape_csv_field, v->s); break;
    }
}

/* Every value set, each for its column's type: a row one value short is a
 * bug that would otherwise write a silent 0. */
static int row_complete(const pb_report *r, const pb_report_value *values)
{
    for (int c = 0; c < r->ncols; c++) {
        const pb_report_column *col = &r->cols[c];
        PB_CHECK(values[c].type != 0, PB_ERR_CHECK, "report: the row has no value for column '%s'", col->key);
        PB_CHECK(values[c].type == col->type, PB_ERR_CHECK, "report: column '%s' is %s, the row's value is %s",
                 col->key, type_name(col->type), type_name(values[c].type));
    }
    return PB_OK;
}

int pb_report_row(pb_report *r, const pb_report_value *values)
{
    PB_TRY(row_complete(r, values));
    cJSON *row = cJSON_CreateObject();
    if (r->table) fputc(' ', r->table);
    for (int c = 0; c < r->ncols; c++) {
        const pb_report_column *col = &r->cols[c];
        if (r->table && col->title) table_cell(r->table, col, &values[c]);
        if (csv_ok(r)) {
            if (c) fputc(',', r->csv);
            csv_cell(r->csv, col, &values[c]);
        }
        if (col->type == PB_COL_INT) cJSON_AddNumberToObject(row, col->key, (double)values[c].i);
        else if (col->type == PB_COL_FLOAT && isnan(values[c].f)) cJSON_AddNullToObject(row, col->key);
        else if (col->type == PB_COL_FLOAT) cJSON_AddNumberToObject(row, col->key, values[c].f);
        else cJSON_AddStringToObject(row, col->key, values[c].s ? values[c].s : "");
    }
    cJSON_AddItemToArray(r->rows, row);
    PB_TRY(publish(r));
    if (r->table) {
        fputc('\n', r->table);
        fflush(r->table);
    }
    if (csv_ok(r)) fputc('\n', r->csv);
    PB_TRY(csv_flush(r));
    return json_changed(r);
}

int pb_report_summary(pb_report *r, const char *key, const char *title, double value, const char *unit)
{
    if (r->table) fprintf(r->table, "# %s: %.6g%s%s\n", title, value, unit ? " " : "", unit ? unit : "");
    if (csv_ok(r)) fprintf(r->csv, "# summary %s: %.6g\n", key, value);
    cJSON_DeleteItemFromObject(r->summary, key);
    cJSON_AddNumberToObject(r->summary, key, value);
    return json_changed(r);
}

int pb_report_meta_add(pb_report *r, const char *key, cJSON *item)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(r->root, "meta");
    if (!meta) meta = cJSON_AddObjectToObject(r->root, "meta");
    char *text = cJSON_PrintUnformatted(item);
    if (!meta || !text) {
        free(text);
        cJSON_Delete(item);
        return pb_fail(PB_ERR_ENV, "out of memory writing the metadata %s", key);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(meta, key);
    cJSON_AddItemToObject(meta, key, item);
    int cut = csv_ok(r) && csv_comment(r->csv, key, text) != 0;
    free(text);
    if (cut) return pb_fail(PB_ERR_ENV, "out of memory writing the metadata %s", key);
    return json_changed(r);
}

int pb_report_note(pb_report *r, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int cut = 0;
    if (r->table) {
        fputs("# ", r->table);
        cut |= pb_escape_fputs(r->table, pb_escape_csv_comment, text) != 0;
        fputc('\n', r->table);
    }
    if (csv_ok(r)) cut |= csv_comment(r->csv, "note", text) != 0;
    cJSON *item = cJSON_CreateString(text);
    if (!item || !cJSON_AddItemToArray(r->notes, item)) {
        cJSON_Delete(item);
        cut = 1;
    }
    if (cut) {
        r->notes_lost++;
        return pb_fail(PB_ERR_ENV, "out of memory writing a note: %s", text);
    }
    return json_changed(r);
}

int pb_report_close(pb_report *r, int complete)
{
    if (!r) return PB_OK;
    int status = PB_OK, lost = PB_OK;
    if (r->notes_lost && complete) { /* results without their notes (a warning among them) are not whole */
        complete = 0;
        lost = pb_fail(PB_ERR_ENV, "%d notes were lost to out of memory: the results stay marked incomplete",
                       r->notes_lost);
    }
    cJSON_ReplaceItemInObject(r->root, "complete", cJSON_CreateBool(complete));
    if (csv_ok(r) && complete) fprintf(r->csv, "# complete\n");
    if (complete) status = publish(r); /* a complete run without rows still replaces the files */
    if (status == PB_OK) status = csv_flush(r); /* "# complete" only whole, never cut */
    if (status == PB_OK && r->published && r->json_path) status = pb_report_json_write_atomic(r->json_path, r->root);
    if (r->csv && fclose(r->csv) != 0 && status == PB_OK) status = pb_fail(PB_ERR_ENV, "closing the CSV file failed");
    if (r->csv && !r->published && r->csv_tmp[0]) unlink(r->csv_tmp); /* refused before any row: the old file stays */
    if (r->table) fflush(r->table);
    cJSON_Delete(r->root);
    free(r->json_path);
    free(r->csv_path);
    free(r);
    return status != PB_OK ? status : lost;
}
