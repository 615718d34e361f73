"""Numba pass of common-subexpression elimination (tape/analyses/cse.py): one forward pass by index with an
open-addressing hash table, so linear in the records (expected), no recursion.

Where a record's key goes: to a window of WINDOW slots at twice its newest input (a record is
mostly read soon after it is made, so the windows in use move through the table with the records
and stay in the caches: at 10^6 records a table with random slots cost a cache miss per record, 40
to 50 ns against 8 ns here), or, once that window is full (an input read by many different records), to a second
table by hash. A window fills only once, so a key not in a window with room is in neither table.
"""

from __future__ import annotations

import numpy as np

from .compiling import jit

WINDOW = 16  # slots: two cache lines of 8-byte entries


def tables(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """merge's state for n records: the windows, the second table (its pages untouched until used),
    and each record's key."""
    size = WINDOW
    while size < 2 * n:
        size *= 2
    return np.zeros(size, np.int64), np.zeros(size, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)


@jit
def merge(op, in0, in1, val_bits, const_bits, renames, two_records, uses_pool, uses_in1, mergeable, start, stop,
          near, far, key_a, key_b, same, out_in0, out_in1):
    """For records [start, stop): same[i] = the first record computing what record i computes (i
    itself if none): a record of a mergeable op with the same inputs in the same order (after merging)
    and the same constant bits or place, or a constant record of the same value bits. out_in0/out_in1:
    the inputs renamed to those first records (renames: in0 names a record; uses_in1: in1 is part of
    the key). Returns how many merged."""
    mask = len(near) - 1
    merged = 0
    for i in range(start, stop):
        k = op[i]
        a = np.int64(in0[i])
        b = np.int64(in1[i])
        if renames[k]:
            a = same[a]
            if two_records[k]:
                b = same[b]
        out_in0[i] = a
        out_in1[i] = b
        same[i] = i
        if not mergeable[k]:
            continue
        newest = a
        if not renames[k]:  # a constant record: its value is the key
            a = val_bits[i]
        elif uses_pool[k]:
            b = const_bits[b]
        elif two_records[k]:
            newest = max(a, b)
        if not uses_in1[k]:
            b = 0
        key_a[i] = a
        key_b[i] = b
        h = (np.int64(k) * -7046029254386353131 + a * -4658895280553007687) ^ (b * 7509641914480166341)
        h = (h ^ (h >> 29)) * -4417276706812531889
        h ^= h >> 32
        fingerprint = (h >> 32) & 0x7FFFFFFF
        slot = (2 * newest) & mask if renames[k] else h & mask
        table, room = near, WINDOW
        while True:
            entry = table[slot]
            if entry == 0:  # not there: entered here
                table[slot] = (fingerprint << 32) | (i + 1)
                break
            if entry >> 32 == fingerprint:  # an entry is fingerprint << 32 | (record + 1); 0 is empty
                j = (entry & 0xFFFFFFFF) - 1
                if op[j] == k and key_a[j] == a and key_b[j] == b:
                    same[i] = j
                    merged += 1
                    break
            slot = (slot + 1) & mask
            room -= 1
            if room == 0:  # a full window: the key is in the second table, or goes there
                table, slot, room = far, h & mask, len(far)
    return merged
