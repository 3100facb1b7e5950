"""The data-flow graph of a program: one node per variable, an edge per use, topological order.

Edges point the way data flows (operand -> the variable defined from it); the seed draws them
the other way (a dependency graph), which is the same graph read backwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from .program import Program


@dataclass(frozen=True)
class Use:
    consumer: str  # the variable whose definition uses the operand
    position: int  # which operand (0 or 1)


class DataFlowGraph:
    """Nodes, edges and orders of a :class:`Program`.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> g = DataFlowGraph(parse(SEED_EXAMPLE))
    >>> g.topological_order()
    ['x', 'w', 'z', 'o', 'y', 'diff', 'lambda']
    >>> [u.consumer for u in g.uses["o"]]
    ['diff']
    """

    def __init__(self, program: Program) -> None:
        self.program = program
        self.nodes: list[str] = list(program.decls)
        self.uses: dict[str, list[Use]] = {n: [] for n in self.nodes}
        for d in program.defs.values():
            for i, arg in enumerate(d.args):
                if isinstance(arg, str):
                    self.uses[arg].append(Use(d.target, i))

    def operands(self, name: str) -> list[str]:
        d = self.program.defs.get(name)
        return d.variables() if d else []

    def edges(self) -> list[tuple[str, str]]:
        """(operand, consumer) pairs, one per distinct use, in program order."""
        seen: list[tuple[str, str]] = []
        for d in self.program.defs.values():
            for a in dict.fromkeys(d.variables()):
                seen.append((a, d.target))
        return seen

    def consumers(self, name: str) -> list[str]:
        """Distinct variables defined from ``name``, in program order."""
        return list(dict.fromkeys(u.consumer for u in self.uses[name]))

    def topological_order(self, roots: list[str] | None = None) -> list[str]:
        """Producers before consumers: a depth-first post-order from the ``roots``.

        Roots default to the loss first, then every other variable nothing uses, in
        declaration order, so every node appears. Operands are visited in order (first, then
        second), as the original compiler did. Iterative, so a 100,000-line chain is fine.
        """
        if roots is None:
            losses = self.program.losses
            sinks = [n for n in self.nodes if not self.uses[n] and n not in losses]
            roots = losses + sinks + self.nodes  # the trailing nodes catch leftovers
        order: list[str] = []
        done: set[str] = set()
        for root in roots:
            if root in done:
                continue
            done.add(root)
            stack: list[tuple[str, int]] = [(root, 0)]
            while stack:
                node, i = stack[-1]
                operands = self.operands(node)
                if i < len(operands):
                    stack[-1] = (node, i + 1)
                    child = operands[i]
                    if child not in done:
                        done.add(child)
                        stack.append((child, 0))
                else:
                    stack.pop()
                    order.append(node)
        return order

    def descendants(self, starts: list[str]) -> set[str]:
        """Every variable reachable from ``starts`` along the data flow, the starts included."""
        seen = set(starts)
        stack = list(starts)
        while stack:
            for u in self.uses[stack.pop()]:
                if u.consumer not in seen:
                    seen.add(u.consumer)
                    stack.append(u.consumer)
        return seen
