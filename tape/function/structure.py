"""The structure of a Function's inputs and params in its file: x0's pytree (tuples, lists and
dicts of numbers and arrays, tape/base/trees.py) as two plain arrays, and their validation.

A spec is written in preorder as int64 tokens; dict keys (str or int) go in a str array beside:

- ``0``: a number; ``1, ndim, d0, ..., d{ndim-1}``: an array of that shape;
- ``2, n`` / ``3, n``: a list / tuple of n items (a namedtuple is saved as a tuple);
- ``4, n``: a dict of n items, each ``kind`` (0: a str key, 1: an int key; the next entry of
  the keys array) then the item;
- ``5, n`` / ``6, n``: a list / tuple of n numbers (the spec of a flat point).

``decode`` checks every token before anything is built: known kinds, counts within what is
left, nesting at most MAX_NESTING deep, shapes of at most 32 nonnegative dimensions, keys
distinct, of one kind and in sorted order (the order flatten reads them in), every token and
key used, and the leaves' sizes adding up to the Function's inputs (params).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from tape.base import trees
from tape.errors import TapeFormatError

MAX_NESTING = 64  # containers within containers a file's structure may hold
MEMBERS = {"input": ("input_tree", "input_keys"), "param": ("param_tree", "param_keys")}
NUMBER, ARRAY, LIST, TUPLE, DICT, FLAT_LIST, FLAT_TUPLE = range(7)


def encode(layout: trees.Layout | None, what: str) -> dict[str, np.ndarray]:
    """The members that hold layout (none for None); what: "input" or "param"."""
    if layout is None:
        return {}
    tokens: list[int] = []
    keys: list[str] = []
    if isinstance(layout.spec, trees.Flat):  # a flat point: the whole tree
        tokens += [FLAT_LIST if layout.spec.kind is list else FLAT_TUPLE, len(layout.shapes)]
    else:
        _encode(layout.spec, tokens, keys, iter(layout.shapes), what)
    tree, names = MEMBERS[what]
    return {tree: np.array(tokens, np.int64), names: np.array(keys, np.str_) if keys else np.zeros(0, "<U1")}


def _encode(spec: Any, tokens: list[int], keys: list[str], shapes: Any, what: str) -> None:
    if spec is trees.NUMBER:
        next(shapes)
        tokens.append(NUMBER)
    elif spec is trees.ARRAY:
        shape = next(shapes)
        tokens += [ARRAY, len(shape), *shape]
    elif isinstance(spec, dict):
        tokens += [DICT, len(spec)]
        for key, item in spec.items():
            if type(key) not in (str, int):
                raise TypeError(f"cannot save the {what}s' structure: a dict key {key!r} of type "
                                f"{type(key).__name__}; a file holds str and int keys")
            tokens.append(int(type(key) is int))
            keys.append(str(key))
            _encode(item, tokens, keys, shapes, what)
    else:  # a list or a tuple (a namedtuple too: saved as a tuple)
        tokens += [LIST if isinstance(spec, list) else TUPLE, len(spec)]
        for item in spec:
            _encode(item, tokens, keys, shapes, what)


def decode(arrays: dict[str, np.ndarray], what: str, size: int, shape: tuple[int, ...] | None) -> trees.Layout | None:
    """The layout of the members of what in arrays (removed from it), checked against the Function's
    size numbers (and shape, for an array spec); None where the file has none (older files)."""
    tree, names = MEMBERS[what]
    if tree not in arrays and names not in arrays:
        return None
    if tree not in arrays or names not in arrays:
        raise TapeFormatError(f"{tree!r} and {names!r} come together; the file has only one of them")
    tokens, keys = arrays.pop(tree), arrays.pop(names)
    if tokens.dtype != np.int64 or tokens.ndim != 1 or keys.dtype.kind != "U" or keys.ndim != 1:
        raise TapeFormatError(f"{tree!r} must be int64 and {names!r} str, 1-D each; got {tokens.dtype} of shape "
                              f"{tokens.shape} and {keys.dtype} of shape {keys.shape}")
    reader = _Reader(tokens.tolist(), keys.tolist(), f"{what}s' structure ({tree!r})", size)
    spec = reader.item(0)
    if reader.at != len(reader.tokens) or reader.key != len(reader.keys):
        raise TapeFormatError(f"{reader.where}: {len(reader.tokens) - reader.at} tokens and "
                              f"{len(reader.keys) - reader.key} keys left over after the structure")
    if reader.total != size:
        raise TapeFormatError(f"{reader.where}: its leaves hold {reader.total} numbers, the Function has "
                              f"{size} {what}s")
    if spec is trees.ARRAY and shape is not None and reader.shapes[0] != shape:
        raise TapeFormatError(f"{reader.where}: an array of shape {reader.shapes[0]}, the Function's {what}s have "
                              f"shape {shape}")
    return trees.Layout.of_shapes(spec, reader.shapes)


class _Reader:
    """Reads a spec from tokens and keys, refusing anything malformed with TapeFormatError."""

    def __init__(self, tokens: list[int], keys: list[str], where: str, size: int):
        self.tokens, self.keys, self.where, self.size = tokens, keys, where, size
        self.at = self.key = self.total = 0
        self.shapes: list[tuple[int, ...]] = []

    def next(self, what: str) -> int:
        if self.at >= len(self.tokens):
            raise TapeFormatError(f"{self.where}: ends where {what} was expected (token {self.at})")
        self.at += 1
        return self.tokens[self.at - 1]

    def count(self) -> int:
        n = self.next("a count")
        if not 0 <= n <= len(self.tokens) - self.at:  # every item takes a token at least
            raise TapeFormatError(f"{self.where}: a count of {n} at token {self.at - 1}, with "
                                  f"{len(self.tokens) - self.at} tokens left")
        return n

    def leaf(self, shape: tuple[int, ...]) -> None:
        self.total += math.prod(shape)
        if self.total > self.size:
            raise TapeFormatError(f"{self.where}: its leaves hold more than the Function's {self.size} numbers")
        self.shapes.append(shape)

    def item(self, depth: int) -> Any:
        if depth > MAX_NESTING:
            raise TapeFormatError(f"{self.where}: nested deeper than {MAX_NESTING} levels")
        kind = self.next("an item")
        if kind == NUMBER:
            self.leaf(())
            return trees.NUMBER
        if kind == ARRAY:
            ndim = self.next("a number of dimensions")
            if not 0 <= ndim <= 32 or ndim > len(self.tokens) - self.at:
                raise TapeFormatError(f"{self.where}: an array of {ndim} dimensions at token {self.at - 1}")
            shape = tuple(self.tokens[self.at:self.at + ndim])
            self.at += ndim
            if any(d < 0 for d in shape):
                raise TapeFormatError(f"{self.where}: an array of shape {shape}")
            self.leaf(shape)
            return trees.ARRAY
        if kind in (FLAT_LIST, FLAT_TUPLE):
            if depth:
                raise TapeFormatError(f"{self.where}: a flat list of numbers inside another container")
            n = self.next("a count")  # numbers take no tokens: bounded by the Function's size
            if not 0 <= n <= self.size:
                raise TapeFormatError(f"{self.where}: a flat list of {n} numbers, the Function has {self.size}")
            self.total += n
            self.shapes += [()] * n
            return trees.FLAT[list if kind == FLAT_LIST else tuple]
        if kind in (LIST, TUPLE):
            items = [self.item(depth + 1) for _ in range(self.count())]
            return items if kind == LIST else tuple(items)
        if kind == DICT:
            return self.dict(depth)
        raise TapeFormatError(f"{self.where}: unknown kind {kind} at token {self.at - 1}")

    def dict(self, depth: int) -> dict:
        spec: dict = {}
        last: Any = None
        for _ in range(self.count()):
            kind = self.next("a key's kind")
            if kind not in (0, 1) or self.key >= len(self.keys):
                raise TapeFormatError(f"{self.where}: a key of kind {kind} (0: str, 1: int) at token {self.at - 1}, "
                                      f"key {self.key} of {len(self.keys)}")
            text = self.keys[self.key]
            self.key += 1
            if kind == 1 and not re.fullmatch(r"-?[0-9]{1,19}", text):
                raise TapeFormatError(f"{self.where}: int key {text[:40]!r} is not an integer")
            key: Any = int(text) if kind == 1 else text
            if spec and (type(key) is not type(last) or not last < key):
                raise TapeFormatError(f"{self.where}: dict keys {last!r}, {key!r} are not distinct keys of one "
                                      "kind in sorted order")
            spec[key] = self.item(depth + 1)
            last = key
        return spec
