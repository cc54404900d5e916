"""Sizes in bytes as the suite reads and writes them: powers of 1024, as the
benchmarks' size options take them (K, M, G, T)."""
import re

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size(text):
    """'64M' -> 67108864, as a benchmark's -b/-e reads it; ValueError otherwise."""
    m = re.fullmatch(r"([0-9]+)([KMGT]?)", text.upper())
    if not m:
        raise ValueError(f"'{text}' is not a size")
    return int(m.group(1)) * UNITS[m.group(2)]


def size_text(b, compact=False):
    """Bytes in the largest unit that divides them whole: for a sentence '8 B', '1536 B', '256 KiB',
    '4 MiB'; compact, for a table's cell, as the options write them: '8', '1536', '256K', '4M'."""
    b = int(b)
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}" if compact else f"{b >> shift} {unit}iB"
    return str(b) if compact else f"{b} B"
