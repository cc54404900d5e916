#include "plan/result_notes.h"

#include "core/error.h"
#include "core/grow.h"
#include "core/lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which notes name rows, and by which columns: the formats of dp_allreduce.c's
 * note_noise, pp_pipeline.c's note_efficiency_noise, fsdp_step.c's and cp_attention.c's report. */
static const struct {
    const char *source, *column[2], *format;
} formats[] = {
    {"dp_allreduce", {"grad_bytes", "overlap"}, "# note: untrustworthy: overhead %*s (grad %63[0-9] B, overlap %63[^)])"},
    {"pp_pipeline", {"schedule", "micro_batches"}, "# note: untrustworthy: efficiency %*s (%63[^,], m=%63[0-9])"},
    {"fsdp_step", {"prefetch", "shard_group"}, "# note: untrustworthy: overhead %*s (prefetch %63[^,], shard group %63[0-9])"},
    {"cp_attention", {"overlap", "cp"}, "# note: untrustworthy: overhead %*s (overlap %63[^,], cp %63[0-9])"},
};

static int add(pb_result_notes *out, int *cap, const pb_result_notes_entry *note)
{
    pb_result_notes_entry *g = pb_grow(out->notes, cap, out->n + 1, sizeof *g, 8);
    if (!g) return PB_ERR_ENV;
    out->notes = g;
    out->notes[out->n++] = *note;
    return PB_OK;
}

static int format_of(const char *source)
{
    int format = -1;
    for (int i = 0; i < (int)(sizeof formats / sizeof *formats); i++)
        if (strcmp(source, formats[i].source) == 0) format = i;
    return format;
}

int pb_result_notes_read(const char *path, const char *source, pb_result_notes *out)
{
    FILE *fp = format_of(source) >= 0 ? fopen(path, "r") : NULL;
    if (!fp) {
        memset(out, 0, sizeof *out);
        out->format = -1;
        return PB_OK;
    }
    int st = pb_result_notes_read_stream(fp, path, source, out);
    fclose(fp);
    return st;
}

int pb_result_notes_read_stream(FILE *fp, const char *name, const char *source, pb_result_notes *out)
{
    memset(out, 0, sizeof *out);
    out->format = format_of(source);
    if (out->format < 0) return PB_OK;
    pb_lines r;
    pb_lines_from(&r, fp, name, "-r/--results", 1);
    r.max = PB_CSV_LINE_MAX;
    char *line;
    int cap = 0, st = PB_OK;
    while (st == PB_OK && pb_lines_next(&r, &line) == PB_OK && line) {
        pb_result_notes_entry note = {0}; /* sscanf fills the keys; zeroed for the analyzers */
        if (sscanf(line, formats[out->format].format, note.key[0], note.key[1]) != 2) continue;
        const char *why = strstr(line, "): ");
        why = why ? why + 3 : "";
        snprintf(note.why, sizeof note.why, "%.*s", (int)strcspn(why, ";"), why);
        st = add(out, &cap, &note);
    }
    pb_lines_close(&r);
    if (st != PB_OK) pb_result_notes_free(out);
    return st;
}

const pb_result_notes_entry *pb_result_notes_of_row(const pb_result_notes *notes, const pb_csv *csv, int row)
{
    for (int i = 0; i < notes->n; i++)
        if (strcmp(pb_csv_get(csv, row, formats[notes->format].column[0]), notes->notes[i].key[0]) == 0 &&
            strcmp(pb_csv_get(csv, row, formats[notes->format].column[1]), notes->notes[i].key[1]) == 0)
            return &notes->notes[i];
    return NULL;
}

void pb_result_notes_free(pb_result_notes *notes)
{
    free(notes->notes);
    notes->notes = NULL;
    notes->n = 0;
}
