"""The data-flow graph of a program: one node per variable, an edge per use, topological order.

Edges point the way data flows (operand -> the variable defined from it); the seed draws them
the other way (a dependency graph), which is the same graph read backwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ops import Const
from .program import Program
from .syntax import Define


@dataclass(frozen=True)
class Step:
    """One line of a program as an engine written by hand reads it: ``target = op
    operands``, with ``op`` None for a copy (``define v = a``) and each operand a variable's
    name (a ``str``) or a constant (a ``float``); ``line`` is its line in the program.

    >>> from tenflang_nb.core.program import parse
    >>> step = steps(parse("declare input x\\ndeclare loss L\\ndefine L = pow x 2\\n"))[0]
    >>> step.target, step.op, step.operands, step.line, str(step)
    ('L', 'pow', ('x', 2.0), 3, 'define L = pow x 2')
    """

    target: str
    op: str | None
    operands: tuple[str | float, ...]
    line: int

    @staticmethod
    def of(define: Define) -> Step:
        return Step(define.target, define.op,
                    tuple(a.value if isinstance(a, Const) else a for a in define.args),
                    define.src.line)

    def __str__(self) -> str:
        operands = " ".join(o if isinstance(o, str) else Const.of(o).text
                            for o in self.operands)
        return f"define {self.target} = {f'{self.op} ' if self.op else ''}{operands}"


def steps(program: Program) -> list[Step]:
    """The program's definitions in topological order (each after the lines its operands
    come from, as :meth:`DataFlowGraph.topological_order` sorts them): a forward pass runs
    them in this order, a reverse pass in the opposite one.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> [str(s) for s in steps(parse(SEED_EXAMPLE))][:2]
    ['define z = mul x w', 'define o = logistic z']
    """
    defs = program.defs
    return [Step.of(defs[n]) for n in DataFlowGraph(program).topological_order() if n in defs]


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
