/* Acceptance verdicts as JUnit XML (plan/thresholds_junit.h). */
#include "plan/thresholds_junit.h"

#include "core/atomic.h"
#include "core/error.h"
#include "core/escape.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Rules, paths and reasons may hold any bytes: core/escape keeps the XML well-formed.
 * 0, or -1 when memory ran out escaping s (nothing written): the file is then not committed. */
static int xml_escaped(FILE *f, const char *s) { return pb_escape_fputs(f, pb_escape_xml, s); }

/* An unwritable --junit is the environment's fault (exit 3), not usage. */
static int junit_failed(const char *path)
{
    int err = errno;
    fprintf(stderr, "acceptance: --junit: cannot write '%s': %s\n", path, strerror(err));
    return PB_ERR_ENV;
}

/* One <testcase>; 0, or -1 when escaping ran out of memory. */
static int write_case(FILE *f, const pb_thresholds_rule *r, const pb_thresholds_eval_outcome *o)
{
    char meas[32];
    pb_thresholds_value_text(r, o->measured, meas, sizeof meas);
    fprintf(f, "    <testcase classname=\"parabench.acceptance.%s\" name=\"line %d: ", r->metric->name, r->line);
    int escaped = xml_escaped(f, r->source_text) == 0;
    fprintf(f, "\" time=\"0\">\n      <system-out>measured: %s (%d rows)</system-out>\n", meas, o->rows);
    if (o->v != PB_TH_PASS) {
        fprintf(f, "      <%s message=\"", o->v == PB_TH_FAIL ? "failure" : "skipped");
        escaped = escaped && xml_escaped(f, o->why) == 0;
        fprintf(f, o->v == PB_TH_FAIL ? "\" type=\"threshold\"/>\n" : "\"/>\n");
    }
    fprintf(f, "    </testcase>\n");
    return escaped ? 0 : -1;
}

int pb_thresholds_junit_write(const char *path, const char *tfile, const pb_thresholds_set *set,
                              const pb_thresholds_eval_outcome *o, const int counts[3])
{
    char tmp[4096];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return errno = EISDIR, junit_failed(path);
    FILE *f = pb_atomic_open(path, tmp, sizeof tmp);
    if (!f) return PB_ERR_ENV;
    char stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", gmtime(&now));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"parabench acceptance\" tests=\"%d\" "
               "failures=\"%d\" skipped=\"%d\">\n  <testsuite name=\"", set->n, counts[PB_TH_FAIL], counts[PB_TH_SKIP]);
    int escaped = xml_escaped(f, tfile) == 0;
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" timestamp=\"%s\">\n", set->n,
            counts[PB_TH_FAIL], counts[PB_TH_SKIP], stamp);
    for (int i = 0; i < set->n; i++) escaped = write_case(f, &set->rules[i], &o[i]) == 0 && escaped;
    fprintf(f, "  </testsuite>\n</testsuites>\n");
    if (!escaped) {
        pb_atomic_commit(f, tmp, path, 0);
        return pb_fail(PB_ERR_ENV, "--junit: out of memory escaping the XML; '%s' not written", path);
    }
    return pb_atomic_commit(f, tmp, path, !ferror(f));
}
