/* One escaping module for every writer: a user string (an argument, a path,
 * a hostname, an environment value, a threshold rule) is made safe for the
 * format it lands in, so it can never end a line, inject a row or make a file
 * unparseable. Each function returns a new malloc'ed string (free it), or
 * NULL when memory runs out; a NULL input reads as "".
 *
 *   csv_comment  one '#' metadata line stays one line: control characters and
 *                the Unicode line breaks U+0085, U+2028, U+2029 as
 *                \n \r \t \xNN, invalid UTF-8 as \xNN (for reading, not
 *                decoding: a backslash is kept as it is).
 *   csv_field    one row field stays one field on one line: control
 *                characters and invalid UTF-8 escaped as above, then RFC 4180
 *                quoting ("..." with "" for a quote) when the value holds a
 *                comma, a quote, or starts with '#' or a blank.
 *   xml          attribute or text: & < > " ' as entities, tab/newline/CR
 *                as character references, other control characters and
 *                invalid UTF-8 as U+FFFD (XML 1.0 does not allow them).
 *   utf8         invalid UTF-8 replaced by U+FFFD, everything else kept: for
 *                JSON text (cJSON escapes control characters but copies
 *                bytes), so the file stays valid JSON.
 *   shell        one word a shell reads back as the same argument: kept as
 *                is when it needs no quoting, in single quotes when it does,
 *                in $'...' (with \n, \xNN) when it holds control characters
 *                or invalid UTF-8, so a printed command line stays one line. */
#ifndef PB_ESCAPE_H
#define PB_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

char *pb_escape_csv_comment(const char *s);
char *pb_escape_csv_field(const char *s);
char *pb_escape_xml(const char *s);
char *pb_escape_utf8(const char *s);
char *pb_escape_shell(const char *s);

/* For a message quoting a user's text: every byte outside printable ASCII
 * as \xNN, so an invisible one (a byte-order mark, a control character) is
 * seen. */
char *pb_escape_ascii(const char *s);

/* A command line (argv) for re-running: each word through pb_escape_shell,
 * joined by blanks. */
char *pb_escape_argv(int argc, char *const *argv);

/* Length of the valid UTF-8 sequence at s (1-4), 0 when the bytes there are
 * not one (overlong forms and surrogates are invalid). s[0] must not be 0. */
int pb_escape_utf8_len(const char *s);

/* Write s escaped by fn to f (fputs of the result); -1 when memory runs out
 * or writing fails. */
int pb_escape_fputs(FILE *f, char *(*fn)(const char *), const char *s);

#endif
