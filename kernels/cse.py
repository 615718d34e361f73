"""Numba pass of common-subexpression elimination (tape/_cse.py): one forward pass by index with an
open-addressing hash table, so linear in the records (expected), no recursion.

Where a record's key goes: to a window of WINDOW slots at twice its newest input (a record is
mostly read soon after it is made, so the windows in use move through the table with the records
and stay in the caches: at 10^6 records a table with random slots cost a cache miss per record, 40
to 50 ns against 8 ns here), or, once that window is full (an input read by many different records), to a second
table by hash. A window fills only once, so a key not in a window with room is in neither table.
"""

from __future__ import annotations

import numpy as np

from ._numba import jit

WINDOW = 16  # slots: two cache lines of 8-byte entries


@jit
def merge(op, in0, in1, val_bits, const_bits, has_input, two_records, uses_pool, mergeable, same, out_in0, out_in1):
    """same[i] = the first record computing what record i computes (i itself if none): a record of a
    mergeable op with the same inputs in the same order (after merging) and the same constant bits, or
    a constant record of the same value bits. out_in0/out_in1: the inputs renamed to those first
    records. Returns how many were merged."""
    n = len(op)
    size = WINDOW
    while size < 2 * n:
        size *= 2
    mask = size - 1
    near = np.zeros(size, np.int64)  # the windows
    far = np.zeros(0, np.int64)  # keys whose window was full (made when a window first fills)
    key_a = np.empty(n, np.int64)
    key_b = np.empty(n, np.int64)
    merged = 0
    for i in range(n):
        k = op[i]
        a = np.int64(in0[i])
        b = np.int64(in1[i])
        if has_input[k]:
            a = same[a]
            if two_records[k]:
                b = same[b]
        out_in0[i] = a
        out_in1[i] = b
        same[i] = i
        if not mergeable[k]:
            continue
        newest = a
        if not has_input[k]:  # a constant record: its value is the key
            a = val_bits[i]
            b = 0
        elif uses_pool[k]:
            b = const_bits[b]
        elif not two_records[k]:
            b = 0
        else:
            newest = max(a, b)
        key_a[i] = a
        key_b[i] = b
        h = (np.int64(k) * -7046029254386353131 + a * -4658895280553007687) ^ (b * 7509641914480166341)
        h = (h ^ (h >> 29)) * -4417276706812531889
        h ^= h >> 32
        fingerprint = (h >> 32) & 0x7FFFFFFF
        slot = (2 * newest) & mask if has_input[k] else h & mask
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
                if len(far) == 0:
                    far = np.zeros(size, np.int64)
                table, slot, room = far, h & mask, size
    return merged
