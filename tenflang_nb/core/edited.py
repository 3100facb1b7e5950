"""A GCP edited by hand: the student deletes a fan-out term or flips a sign in the compiled
GCP and trains with it, to see what a wrong gradient does.

:func:`edit_gcp` parses the edited text (errors name the file, ``NAME (edited GCP)``, and
``line N``), checks that it keeps the GCP's interface (the same inputs with their shapes, the
loss, an output ``d/L/d/w`` for every weight) and finds which lines changed. The result is a
:class:`Gcp` like the compiler's, so everything that trains or shows a GCP takes it; each line
keeps the shape-program line it derives from where the edit left it in place.

>>> from tenflang_nb.core.backprop import compile_program
>>> from tenflang_nb.core.program import parse
>>> gcp = compile_program(parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"))
>>> edited = edit_gcp(gcp, gcp.text.replace("add w w", "mul w -2"), "sq (edited GCP)")
>>> edited.changed, [str(edited.lines[n - 1].statement) for n in edited.changed]
((11,), ['define d/L/d/w = mul w -2'])
>>> try:
...     edit_gcp(gcp, gcp.text.replace("declare output d/L/d/w", "declare intvar d/L/d/w"), "sq")
... except TenFlangError as err:
...     print(err.render())
sq: line 10: error: 'd/L/d/w' must stay an output (the gradient of 'w'), not an intvar
    declare intvar d/L/d/w
    ^^^^^^^^^^^^^^^^^^^^^^
    hint: the compiled GCP declares it 'declare output d/L/d/w'
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from .backprop import Gcp, GcpLine
from .errors import Diagnostic, TenFlangError
from .formatting import fmt_shape
from .lexical import adjoint_name
from .program import Program, parse

__all__ = ["EditedGcp", "edit_gcp"]


@dataclass
class EditedGcp(Gcp):
    """A GCP edited by hand (:func:`edit_gcp`): its ``lines`` (one statement a line, blank
    lines dropped: ``text`` numbers them), the ``original`` compiled GCP, the lines of
    ``text`` that are not the original's (``changed``) and the original's lines the edit
    removed (``removed``, numbered as in ``original.text``)."""

    file: str = "<edited GCP>"
    original: Gcp | None = None
    changed: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()

    def program(self) -> Program:
        """The edited GCP as a checked :class:`Program`, named ``file``."""
        return parse(self.text, self.file)


def edit_gcp(original: Gcp, text: str, file: str) -> EditedGcp:
    """``text``, the GCP ``original`` edited, parsed and checked (see the module docstring);
    errors name ``file`` and the line of ``text``."""
    edited = parse(text, file)
    compiled = original.program()
    _check_interface(edited, compiled, original)
    before = [str(line.statement) for line in original.lines]
    statements = edited.statements
    after = [str(s) for s in statements]
    lines: list[GcpLine] = []
    changed: list[int] = []
    removed: list[int] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        removed += [i + 1 for i in range(i1, i2)] if op in ("delete", "replace") else []
        for k, j in enumerate(range(j1, j2)):
            # an edited line derives from the line it replaced (or the one before an insert)
            at = min(i1 + k, i2 - 1) if i2 > i1 else i1 - 1
            source = original.lines[at] if 0 <= at < len(original.lines) else None
            origin = source.origin if source is not None else 0
            section = source.section if source is not None else "backward"
            lines.append(GcpLine(statements[j], origin, section))
            if op != "equal":
                changed.append(j + 1)
    return EditedGcp(original.shape_program, original.loss, list(original.weights),
                     original.full, lines, file=file, original=original,
                     changed=tuple(changed), removed=tuple(removed))


def _check_interface(edited: Program, compiled: Program, original: Gcp) -> None:
    """The edited GCP takes the same data and weights and gives the loss and the gradients."""
    file = edited.file
    errors: list[Diagnostic] = []
    loss = original.loss
    wanted = {name: ("input", compiled.shapes[name], compiled.decls[name])
              for name in compiled.names("input")}
    wanted[loss] = ("loss", (), compiled.decls[loss])
    gradients = {adjoint_name(loss, w): w for w in original.weights}
    for grad in gradients:
        wanted[grad] = ("output", compiled.shapes[grad], compiled.decls[grad])
    for name, (kind, shape, decl) in wanted.items():
        role = _role(name, kind, gradients)
        hint = f"the compiled GCP declares it '{decl}'"
        found = edited.decls.get(name)
        if found is None:
            errors.append(Diagnostic(f"the edited GCP must keep {role}: '{name}' is not "
                                     "declared", file, hint=hint))
        elif found.kind != kind:
            errors.append(found.src.diag(f"'{name}' must stay {_article(kind)} ({role}), not "
                                         f"{_article(found.kind)}", hint=hint))
        elif edited.shapes[name] != shape:
            errors.append(found.src.diag(
                f"'{name}' must keep its shape {_shape(shape)} ({role}), not "
                f"{_shape(edited.shapes[name])}", hint=hint))
    # a new weight or expected output is an input too: the trainer would ask the data for it
    for name in [*edited.names("input"), *edited.names("weight"), *edited.names("exp_output")]:
        if name not in wanted:
            decl = edited.decls[name]
            errors.append(decl.src.diag(
                f"'{name}' is {_article(decl.kind)} the compiled GCP does not have: no data or "
                "weight gives it a value", 2, hint="declare it intvar and define it, or use "
                "one of the GCP's inputs"))
    for name in edited.losses:
        if name != loss:
            decl = edited.decls[name]
            errors.append(decl.src.diag(f"the GCP's loss is '{loss}': '{name}' cannot be a "
                                        "second one", 2))
    if errors:
        raise TenFlangError(errors)


def _role(name: str, kind: str, gradients: dict[str, str]) -> str:
    if name in gradients:
        return f"the gradient of '{gradients[name]}'"
    return {"loss": "the loss", "input": "an input of the GCP (data or a weight)"}[kind]


def _shape(shape: tuple[int, ...]) -> str:
    return fmt_shape(shape) if shape else "scalar"


def _article(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
