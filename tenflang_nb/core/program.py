"""A checked TenFlang program: text -> statements -> :class:`Program` (kinds, shapes, warnings).

``parse`` is the front door: it runs the original's preprocessor (vectors and macros) when a
program uses it, parses every line, and checks the rules of the language, reporting every
error found (each with the file, ``line N`` and a caret), not only the first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import lexical, ops, preprocess
from .arguments import check_arguments
from .errors import Diagnostic, TenFlangError
from .formatting import fmt_list, fmt_shape
from .lexical import GIVEN_KINDS
from .ops import Const, Shape, ShapeError
from .perf import gc_paused
from .syntax import Comment, Declare, Define, Src, Statement, parse_statements


@dataclass
class Program:
    """A parsed and checked program.

    >>> p = parse("declare input x\\ndeclare output y\\ndefine y = mul x 2\\n")
    >>> p.kind("y"), p.shapes["y"], [str(s) for s in p.definitions()]
    ('output', (), ['define y = mul x 2'])
    """

    file: str
    statements: list[Statement]
    decls: dict[str, Declare]
    defs: dict[str, Define]
    shapes: dict[str, Shape]
    warnings: list[Diagnostic] = field(default_factory=list)
    expanded: bool = False  # the user wrote vectors/macros; statements are the expansion

    def kind(self, name: str) -> str:
        return self.decls[name].kind

    def names(self, *kinds: str) -> list[str]:
        """Declared names of the given kinds, in declaration order."""
        return [n for n, d in self.decls.items() if d.kind in kinds]

    def definitions(self) -> list[Define]:
        return list(self.defs.values())

    @property
    def losses(self) -> list[str]:
        return self.names("loss")

    @property
    def loss(self) -> str:
        """The loss variable's name (exactly one loss is required)."""
        found = self.losses
        if len(found) != 1:
            raise TenFlangError(self._loss_diagnostics())
        return found[0]

    def _loss_diagnostics(self) -> list[Diagnostic]:
        found = self.losses
        if not found:
            return [Diagnostic("no loss declared: a shape program needs one "
                               "'declare loss <name>'", self.file)]
        first = self.decls[found[0]].src.line
        return [self.decls[n].src.diag(
            f"a shape program has exactly one loss; '{n}' is a second one "
            f"(the first is '{found[0]}' on line {first})", 2) for n in found[1:]]

    def text(self) -> str:
        """The program as canonical TenFlang text (one statement per line)."""
        return "".join(f"{s}\n" for s in self.statements)


def parse(text: str, file: str = "<program>") -> Program:
    """Parse and check TenFlang ``text``; raise :class:`TenFlangError` listing every error.

    >>> parse("declare input x\\ndefine y = mul x 2\\n", "a.tf")
    Traceback (most recent call last):
    ...
    tenflang_nb.core.errors.TenFlangError: a.tf: line 2: error: 'y' is defined but never declared
        define y = mul x 2
               ^
        hint: add 'declare intvar y' (or output/loss) before this line
    """
    check_arguments(text=text, file=file)
    with gc_paused():
        return _parse(text, file)


def _parse(text: str, file: str) -> Program:
    text = lexical.normalize_text(text)
    lines = _program_lines(text, file)
    if not any(t and t[0] != lexical.MACRO_DIRECTIVE for t in map(lexical.split_tokens, lines)):
        raise TenFlangError([Diagnostic(
            "empty program: no declarations or definitions", file,
            hint="a program starts with lines like 'declare input x'")])
    if preprocess.needs_preprocessing(text):
        expanded = preprocess.preprocess(text, file)
        originals = {n: line for n, line in enumerate(lines, 1)}
        statements = parse_statements([(e.line, e.text) for e in expanded], file)
        statements = [_relocate(s, originals) for s in statements]
        program = check(statements, file)
        program.expanded = True
        return program
    return check(parse_statements(list(enumerate(lines, 1)), file), file)


def _program_lines(text: str, file: str) -> list[str]:
    """The lines of a program, rejecting overlong ones (a sign of a binary or minified file)."""
    lines = lexical.split_lines(text)
    for number, line in enumerate(lines, 1):
        if len(line) > lexical.MAX_LINE_LENGTH:
            raise TenFlangError.at(
                f"line is {len(line)} characters long (at most {lexical.MAX_LINE_LENGTH} "
                "allowed)", file=file, line=number, source=line[:80])
    return lines


def _relocate(statement: Statement, originals: dict[int, str]) -> Statement:
    # errors in an expanded line must show the line the user wrote, and the expansion as a hint
    src = statement.src
    user = originals.get(src.line, src.text)
    if user.strip() == src.text.strip():
        return statement
    moved = Src(src.file, src.line, user, expansion=src.text.strip())
    if isinstance(statement, Declare):
        return Declare(statement.kind, statement.name, statement.shape, moved)
    if isinstance(statement, Define):
        return Define(statement.target, statement.op, statement.args, moved)
    return Comment(statement.text, moved)


def check(statements: Iterable[Statement], file: str = "<program>") -> Program:
    """Check the language rules and infer shapes; see the Guide to TenFlang for the rules."""
    statements = list(statements)
    decls: dict[str, Declare] = {}
    defs: dict[str, Define] = {}
    shapes: dict[str, Shape] = {}
    errors: list[Diagnostic] = []
    failed: set[str] = set()
    declared_at = {}
    for s in statements:  # to say "declared on line 12, after this use"
        if isinstance(s, Declare):
            declared_at.setdefault(s.name, s.src.line)

    for s in statements:
        if isinstance(s, Declare):
            if s.name in decls:
                errors.append(s.src.diag(
                    f"'{s.name}' is declared twice (first on line {decls[s.name].src.line})", 2))
                continue
            decls[s.name] = s
            if s.kind in GIVEN_KINDS:
                shapes[s.name] = s.shape or ()
        elif isinstance(s, Define):
            _check_define(s, decls, defs, shapes, declared_at, errors, failed)
    if errors:
        raise TenFlangError(errors)

    for name, d in decls.items():
        if name not in shapes:  # declared, never defined: stays NULL when run
            shapes[name] = d.shape or ()
    program = Program(file, statements, decls, defs, shapes)
    for loss in program.losses:
        if loss in defs and shapes[loss] != ():
            errors.append(defs[loss].src.diag(
                f"the loss must be a scalar, but '{loss}' has shape {fmt_shape(shapes[loss])}",
                1, hint="reduce it with 'sum' or 'mean'"))
    if errors:
        raise TenFlangError(errors)
    program.warnings = _warnings(program)
    return program


def _check_define(s: Define, decls: dict[str, Declare], defs: dict[str, Define],
                  shapes: dict[str, Shape], declared_at: dict[str, int],
                  errors: list[Diagnostic], failed: set[str]) -> None:
    # ``failed``: targets whose own line was reported; their uses add no second error
    target = s.target
    ok = True
    if target not in decls:
        later = declared_at.get(target)
        if later is None:
            errors.append(s.src.diag(
                f"'{target}' is defined but never declared", 1,
                hint=f"add 'declare intvar {target}' (or output/loss) before this line"))
        else:
            errors.append(s.src.diag(
                f"'{target}' is defined before it is declared (declared on line {later})", 1))
        ok = False
    elif decls[target].kind in GIVEN_KINDS:
        kind = decls[target].kind.replace("_", " ")
        errors.append(s.src.diag(
            f"cannot define '{target}': it is declared {kind} on line "
            f"{decls[target].src.line}, so its value comes from the data", 1))
        ok = False
    elif target in defs:
        errors.append(s.src.diag(
            f"'{target}' is defined twice (first on line {defs[target].src.line})", 1))
        ok = False

    arg_shapes: list[Shape] = []
    for i, arg in enumerate(s.args):
        if isinstance(arg, Const):
            arg_shapes.append(())
            continue
        token = s.operand_token(i)
        if arg == target and target not in defs:
            errors.append(s.src.diag(f"'{arg}' is used in its own definition", token))
            ok = False
        elif arg in failed:
            ok = False  # "used before it is defined" would mislead: its line had an error
        elif arg not in decls:
            later = declared_at.get(arg)
            where = f" (declared on line {later})" if later else ""
            errors.append(s.src.diag(f"'{arg}' is not declared before this line{where}",
                                     token))
            ok = False
        elif arg not in shapes:
            d = decls[arg]
            errors.append(s.src.diag(
                f"'{arg}' is used before it is defined (a{'n' * (d.kind[0] in 'aeiou')} "
                f"{d.kind} must be defined on an earlier line)", token))
            ok = False
        else:
            arg_shapes.append(shapes[arg])
    if not ok:
        if target not in defs:
            failed.add(target)
        return
    if s.op is None:
        shape = arg_shapes[0]
    else:
        op = ops.OPS[s.op]
        try:
            shape = op.shape_rule(*arg_shapes)
        except ShapeError as exc:
            described = fmt_list([fmt_shape(a) for a in arg_shapes])
            errors.append(s.src.diag(f"{s.op} of {described}: {exc}", 3))
            failed.add(target)
            return
    problem = lexical.size_problem(shape, f"the result of {s.op}")
    if problem:
        errors.append(s.src.diag(problem, 3))
        failed.add(target)
        return
    declared = decls[target].shape
    if declared is not None and declared != shape:
        errors.append(s.src.diag(
            f"'{target}' is declared with shape {fmt_shape(declared)} on line "
            f"{decls[target].src.line}, but this line gives {fmt_shape(shape)}", 1))
        failed.add(target)
        return
    defs[target] = s
    shapes[target] = shape


def _warnings(program: Program) -> list[Diagnostic]:
    used: set[str] = set()
    for d in program.defs.values():
        used.update(d.variables())
    warnings: list[Diagnostic] = []
    for name, decl in program.decls.items():
        if decl.kind in ("output", "loss"):
            if name not in program.defs:
                warnings.append(decl.src.diag(
                    f"{decl.kind} '{name}' is declared but never defined (it stays null)", 2,
                    severity="warning"))
            continue
        if name not in used:
            what = "defined" if name in program.defs else "declared"
            warnings.append(decl.src.diag(f"'{name}' is {what} but never used", 2,
                                          severity="warning"))
    if len(program.losses) == 1 and program.loss in program.defs:
        reach = ancestors(program, program.loss)
        for w in program.names("weight"):
            if w in used and w not in reach:
                warnings.append(program.decls[w].src.diag(
                    f"weight '{w}' cannot affect the loss '{program.loss}' "
                    "(its gradient is always 0)", 2, severity="warning"))
    return warnings


def ancestors(program: Program, name: str) -> set[str]:
    """Every variable ``name`` depends on, itself included (iterative: no recursion limit)."""
    seen = {name}
    stack = [name]
    while stack:
        d = program.defs.get(stack.pop())
        if d is None:
            continue
        for a in d.variables():
            if a not in seen:
                seen.add(a)
                stack.append(a)
    return seen
