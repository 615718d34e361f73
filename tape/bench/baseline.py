"""The articles' design, as the baseline for ``tape-bench --compare``.

One Python object per node holding its value, gradient, input nodes and a
closure with its local rule; backward finds a reverse topological order by
DFS post-order (iterative here, with a visited set, so deep graphs work)
and runs the closures. Everything ``tape`` does differently is measured
against this.
"""

from __future__ import annotations

import math


class Node:
    __slots__ = ("val", "grad", "inputs", "backward_rule")

    def __init__(self, val: float, inputs: tuple = (), backward_rule=None):
        self.val, self.grad, self.inputs, self.backward_rule = val, 0.0, inputs, backward_rule

    def __add__(self, other):
        other = other if isinstance(other, Node) else Node(other)
        out = Node(self.val + other.val, (self, other))

        def rule():
            self.grad += out.grad
            other.grad += out.grad

        out.backward_rule = rule
        return out

    __radd__ = __add__

    def __sub__(self, other):
        other = other if isinstance(other, Node) else Node(other)
        out = Node(self.val - other.val, (self, other))

        def rule():
            self.grad += out.grad
            other.grad -= out.grad

        out.backward_rule = rule
        return out

    def __rsub__(self, other):
        return Node(other) - self

    def __mul__(self, other):
        other = other if isinstance(other, Node) else Node(other)
        out = Node(self.val * other.val, (self, other))

        def rule():
            self.grad += out.grad * other.val
            other.grad += out.grad * self.val

        out.backward_rule = rule
        return out

    __rmul__ = __mul__


def _unary(value_and_slope):
    def function(x: Node) -> Node:
        value, slope = value_and_slope(x.val)
        out = Node(value, (x,))

        def rule():
            x.grad += out.grad * slope

        out.backward_rule = rule
        return out

    return function


def _sigmoid(a: float) -> tuple[float, float]:
    s = 1.0 / (1.0 + math.exp(-a)) if a >= 0 else math.exp(a) / (1.0 + math.exp(a))
    return s, s * (1.0 - s)


FUNCTIONS = {
    "sin": _unary(lambda a: (math.sin(a), math.cos(a))),
    "cos": _unary(lambda a: (math.cos(a), -math.sin(a))),
    "tanh": _unary(lambda a: (math.tanh(a), 1.0 - math.tanh(a) ** 2)),
    "sigmoid": _unary(_sigmoid),
    "relu": _unary(lambda a: (a, 1.0) if a > 0 else (0.0, 0.0)),
}


def backward(root: Node) -> None:
    """DFS post-order from the root (explicit stack), then every rule in reverse."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in node.inputs if id(child) not in seen)
    root.grad = 1.0
    for node in reversed(order):
        if node.backward_rule is not None:
            node.backward_rule()
