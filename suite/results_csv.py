"""The rows of a results CSV for the Python readers (scripts/report.py, suspects.py): `#` lines
and blank lines skipped, and a garbled row (another field count than the header's, as in a file
cut mid-row) left out and named as FILE:LINE on stderr, so it is never read as a value."""
import csv
import sys

_said = set()  # (path, line) already named: several readers of one file say it once


def _say(text, key):
    if key not in _said:
        _said.add(key)
        print(text, file=sys.stderr)


def rows(path, who):
    """[{column: text}] of PATH; [] when it is missing. WHO names the reader in a message."""
    out, header = [], None
    try:
        with open(path, newline="", errors="replace") as f:
            for n, fields in enumerate(csv.reader(f), 1):
                if not "".join(fields).strip() or fields[0].startswith("#"):
                    continue
                if header is None:
                    header = fields
                elif len(fields) != len(header):
                    _say(f"{who}: {path}:{n}: garbled row ({len(fields)} fields, the header has {len(header)}); "
                         "left out", (path, n))
                else:
                    out.append(dict(zip(header, fields)))
    except FileNotFoundError:
        return []
    except (OSError, csv.Error) as e:
        _say(f"{who}: {path}: {e}; left out", (path, 0))
    return out
