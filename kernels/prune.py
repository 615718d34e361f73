"""Numba passes of dead-record elimination (tape/analyses/prune.py): what the roots depend on is marked by
graph.mark_reaching (one reverse pass by index); then the marked records are copied with their inputs
and constant slots renumbered.
Linear in the records, no recursion."""

from __future__ import annotations

from .compiling import jit


@jit
def compact(op, in0, in1, val, has_input, two_records, uses_pool, live, new_row, slot_map,
            out_op, out_in0, out_in1, out_val, slots):
    """Copy the live records in order into out_*: inputs renumbered by new_row (filled here, -1 for a
    dropped record), constant slots by slot_map (-1: unused yet; slots[j] = the old slot of new slot j,
    in order of first use). Returns the constant slots used."""
    j = 0
    n_slots = 0
    for i in range(len(op)):
        if not live[i]:
            continue
        new_row[i] = j
        k = op[i]
        out_op[j] = k
        out_val[j] = val[i]
        a = in0[i]
        b = in1[i]
        if has_input[k]:
            a = new_row[a]
        if two_records[k]:
            b = new_row[b]
        elif uses_pool[k]:
            if slot_map[b] < 0:
                slot_map[b] = n_slots
                slots[n_slots] = b
                n_slots += 1
            b = slot_map[b]
        out_in0[j] = a
        out_in1[j] = b
        j += 1
    return n_slots


@jit
def mark_varying(op, in0, in1, has_input, two_records, is_select, is_comparison, rows, varying, foldable):
    """varying[i] = True for the rows (inputs and params) and every record depending on one (a select
    also on the comparison just before it); foldable[i] = True for the other records with inputs,
    comparisons aside. Returns how many are foldable."""
    for k in range(len(rows)):
        varying[rows[k]] = True
    count = 0
    for i in range(len(op)):
        k = op[i]
        if has_input[k]:
            v = varying[in0[i]]
            if two_records[k]:
                v = v or varying[in1[i]]
            if is_select[k]:
                v = v or varying[i - 1]
            varying[i] = v
            if not v and not is_comparison[k]:
                foldable[i] = True
                count += 1
    return count
