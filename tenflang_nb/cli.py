"""The three commands: ``tfcompiler``, ``tfweightcalc``, ``tfevaluate``.

Thin wrappers over ``tenflang_nb.core.api``. Exit status: 0 success, 1 a bad program, file or
value, 2 bad usage, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP).
Errors go to stderr naming the file and ``line N``; nothing goes to stdout (and no ``-o`` file
is touched) unless the command succeeds. A signal ends a command as Ctrl-C does: its files are
cleaned up (no temporary file left beside an output) before it exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import textwrap
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any, NoReturn

import numpy as np

from . import __version__
from .core import api, fused, fusedcache
from .core.bindings import weight_record
from .core.datafiles import FORMATS, DataTable, format_table, output_format, read_data
from .core.describe_ops import describe_operators
from .core.errors import Diagnostic, TenFlangError, printable
from .core.formatting import fmt_number
from .core.plan import Plan
from .core.preprocess import preprocess_text
from .core.settings import SETTINGS, SettingsError, TrainSettings
from .core.textio import OutputFile, output_problem, read_text, same_file, write_atomic
from .core.train import Record, gcp_weights


def _emit(text: str | bytes, output: str | None) -> None:
    if output:
        write_atomic(output, text)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        raise
    except OSError as exc:  # a full disk behind > out.txt, or > /dev/full
        _drop_stdout()
        raise TenFlangError.at(f"cannot write: {exc.strerror}", file="<stdout>") from None


def _drop_stdout() -> None:
    """Send what is left in stdout's buffer to /dev/null: Python's flush at exit would fail
    on it again and print its own message (as the docs of BrokenPipeError advise)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _warn(diags: Sequence[Diagnostic], quiet: bool) -> None:
    if not quiet:
        for d in diags:
            print(d.render(), file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse, with the user's text in its messages escaped (``printable``): an option
    or a file name must not drive the terminal through an error message."""

    def error(self, message: str) -> NoReturn:
        super().error(printable(message))

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        # argparse drops an OSError: --help on a full disk would print nothing and succeed
        if message and file is sys.stdout:
            _emit(message, None)
        else:
            super()._print_message(message, file)


def _parser(prog: str, description: str, epilog: str) -> _Parser:
    p = _Parser(prog=prog, description=description, epilog=epilog,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (atomically) instead of standard output")
    p.add_argument("-q", "--quiet", action="store_true", help="no warnings or progress")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def _check_outputs(p: _Parser, args: argparse.Namespace, reads: dict[str, str | None]) -> None:
    """Refuse, before anything runs, an output file (``-o``, ``--log``) that cannot be
    written or that is one of the files the command reads (a usage error)."""
    outputs = {"-o/--output": args.output, "--log": getattr(args, "log", None)}
    for option, path in outputs.items():
        problem = path and output_problem(path, reads)
        if problem:
            p.error(f"argument {option}: {problem}")
    if args.output and outputs["--log"] and (
            os.path.realpath(args.output) == os.path.realpath(args.log)
            or same_file(args.output, args.log)):
        p.error("argument --log: the log and the output (-o) are the same file")


def _formats_help() -> str:
    """The data formats for a command's epilog, from the registry of formats."""
    lines = ["data files (the format by the file's name, else by its first line):"]
    for f in FORMATS.values():
        written = f.written_to()
        about = f"{f.doc} (recognised by {f.recognised_by()}" + (
            f"; -o writes it to {written})" if written else ")")
        lines += textwrap.wrap(about.replace("`", ""), 79, initial_indent=f"  {f.name:<10}",
                               subsequent_indent=" " * 12, break_on_hyphens=False)
    return "\n".join(lines)


class _Terminated(BaseException):
    """A SIGTERM or SIGHUP, raised where the command is, so that its ``finally`` and ``with``
    blocks run as for Ctrl-C (Python's default for these signals ends the process at once,
    leaving an output's hidden temporary file behind). A BaseException, as KeyboardInterrupt:
    no ``except Exception`` on the way may take it for an error of the program."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_ENDING_SIGNALS = {signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}


def _raise_terminated(signum: int, _frame: object) -> None:
    raise _Terminated(signum)


@contextmanager
def _signals_end_cleanly() -> Iterator[None]:
    """While the command runs, SIGTERM and SIGHUP raise :class:`_Terminated`; the previous
    handlers come back after it (a command called in-process leaves its caller's alone).
    Only the main thread may set handlers: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise_terminated) for s in _ENDING_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _main(body: Callable[[list[str] | None], int], argv: list[str] | None, prog: str) -> int:
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *rest: Any) -> None:
            # the package's own warnings (the fused engine unavailable) as the command's
            if category.__module__.startswith("tenflang_nb."):
                print(printable(f"{prog}: warning: {message}"), file=sys.stderr)
            else:
                shown(message, category, *rest)

        warnings.showwarning = show
        return _guarded(body, argv, prog)


def _guarded(body: Callable[[list[str] | None], int], argv: list[str] | None, prog: str) -> int:
    try:
        with _signals_end_cleanly():
            return body(argv)
    except TenFlangError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except _Terminated as exc:
        try:  # after a hangup, the terminal may be gone
            print(f"{prog}: {_ENDING_SIGNALS[signal.Signals(exc.signum)]}", file=sys.stderr)
        except OSError:
            pass
        return 128 + exc.signum
    except BrokenPipeError:
        return 1
    except MemoryError:
        print(f"{prog}: out of memory", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug in tenflang_nb: still no traceback for the user
        if os.environ.get("TENFLANG_DEBUG"):
            traceback.print_exc()
        print(printable(f"{prog}: internal error: {type(exc).__name__}: {exc}") + "\n"
              "(set TENFLANG_DEBUG=1 to see the traceback, and please report it)",
              file=sys.stderr)
        return 1


# ---------------------------------------------------------------------------- tfcompiler


def _compiler(argv: list[str] | None) -> int:
    p = _parser("tfcompiler", "Compile a TenFlang shape program to its Gradient Computing "
                "Program (GCP), or with --forward to its forward-mode program, or with --hvp "
                "to its Hessian-vector program, printed on standard output.",
                "example:\n  tfcompiler shape.tf > gcp.tf\n  tfcompiler --full shape.tf -o gcp.tf\n"
                "  tfcompiler --forward shape.tf -o forward.tf   # the same gradients, forward "
                "mode\n  tfcompiler --hvp shape.tf -o hvp.tf           # H v: the GCP compiled "
                "again")
    p.add_argument("shape", metavar="SHAPE.tf", nargs="?", help="the shape program")
    p.add_argument("--full", action="store_true",
                   help="keep every partial derivative (default: only what some weight's "
                        "gradient needs)")
    p.add_argument("--forward", action="store_true",
                   help="write the forward-mode program instead: one sweep per weight "
                        "component carrying each variable's derivative d/v/d/w, with the "
                        "GCP's outputs d/L/d/w (run or train it like a GCP to compare)")
    p.add_argument("--hvp", action="store_true",
                   help="write the Hessian-vector program instead: the GCP, then the derivative "
                        "along a direction v (inputs v/<w>, one per weight) of every value the "
                        "gradients need; its outputs dv/d/L/d/w, averaged over examples, are "
                        "H v (forward mode over the GCP)")
    p.add_argument("--expand", action="store_true",
                   help="print the program with vectors and macros expanded, do not compile")
    p.add_argument("--list-ops", action="store_true",
                   help="print the table of operators and exit")
    args = p.parse_args(argv)
    _check_outputs(p, args, {"SHAPE.tf": args.shape})
    if args.list_ops:
        _emit(describe_operators(), args.output)
        return 0
    if args.shape is None:
        p.error("the following arguments are required: SHAPE.tf")
    text = read_text(args.shape)
    if args.expand:
        _emit(preprocess_text(text, args.shape), args.output)
        return 0
    modes = [f"--{name}" for name in ("forward", "hvp", "full") if getattr(args, name)]
    if len(modes) > 1:
        p.error(f"{' and '.join(modes)} cannot be combined: one program at a time (--full "
                "is the GCP's)")
    program = api.parse(text, args.shape)
    if args.forward:
        gcp = api.compile_forward(program)
    elif args.hvp:
        gcp = api.compile_hvp(program)
    else:
        gcp = api.compile(program, full=args.full)
    _warn(program.warnings, args.quiet)
    _emit(gcp.text, args.output)
    return 0


def compiler_main(argv: list[str] | None = None) -> int:
    """Entry point of ``tfcompiler``."""
    return _main(_compiler, argv, "tfcompiler")


# ---------------------------------------------------------------------------- tfweightcalc


class _Progress:
    def __init__(self, enabled: bool, max_iter: int) -> None:
        self.enabled = enabled
        self.max_iter = max_iter
        self.last = 0.0

    def __call__(self, trainer: api.GradientDescent, record: Record) -> None:
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.2 or trainer.done):
            self.last = now
            sys.stderr.write(f"\riteration {record.iteration}/{self.max_iter}  "
                             f"loss {fmt_number(record.loss)}  "
                             f"|grad| {fmt_number(record.grad_norm, 3)}   ")
            if trainer.done:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _add_settings(p: argparse.ArgumentParser) -> None:
    # the options are the training settings' own table: names, help, defaults, choices
    # (no argparse choices: a bad value gets TrainSettings' message, as everywhere else)
    for setting in SETTINGS.values():
        default = "" if setting.default is None else f" (default {setting.default})"
        p.add_argument(setting.option, dest=setting.name, default=setting.default,
                       metavar=setting.name.upper(), help=setting.help + default)


def _settings(p: _Parser, args: argparse.Namespace) -> TrainSettings:
    """The options as checked settings; a bad one is a usage error (exit status 2)."""
    try:
        values = {name: setting.parse(value) if isinstance(value, str) else value
                  for name, setting in SETTINGS.items()
                  for value in [getattr(args, name)]}
        return TrainSettings(**values)
    except SettingsError as exc:
        p.error(exc.diagnostics[0].message)


# numbers x passes beyond which a run in between auto's sizes takes the fused engine from its
# start (the reference engine takes 0.25-0.8 ns a number a pass here: 2-6 s of training, of
# which the fused engine saves 15-60 %: more than loading numba costs, 0.5-1 s)
FUSED_PAYS_AFTER = 8e9


def _engine_for_the_run(gcp_program: api.Program, data: DataTable,
                        settings: TrainSettings) -> TrainSettings:
    """The engine ``auto`` gives a run whose length is known: the whole of a process.

    ``auto`` alone starts a batch of the in-between size (``fused``: above a million numbers
    a pass, below the chunked size) on the reference engine and loads numba in the background
    after a second, not knowing how long the run will be: here the process ends with its run,
    which often ended before that load did (W1, 100,000 rows and 1,000 steps: ~1 s of CPU
    spent on a load never used, in a child process still running after the command had
    exited). tfweightcalc knows the run's length (``--max-iter``): numba is loaded first when
    the run is long enough to win the load back and its loops are in the cache, else never
    (a run that stops early, converged, has loaded it for nothing). Bad input is left for
    the trainer to report.
    """
    if settings.engine != "auto":
        return settings
    try:
        _, grads = gcp_weights(gcp_program)
        plan = Plan(gcp_program)
        rows = min(settings.batch_size or len(data), len(data))
        given = {k: data.columns[k][:rows] for k in plan.given
                 if k in data.columns and k not in grads}
        numbers = fused.reference_bytes(plan, given, rows) // 8
    except (TenFlangError, KeyError, ValueError):
        return settings
    if numbers < fused.AUTO_NUMBERS or numbers * 8 > fused.CHUNK_OVER:
        return settings  # auto's choice is made at the start: no numba, or numba waited for
    if numbers * (settings.max_iter + 1) <= FUSED_PAYS_AFTER:
        return settings.replace(engine="reference")
    if fusedcache.filled() and fused.load(wait=True) is not None:
        return settings  # auto now binds the fused engine from the first step
    return settings  # a first compile (10-60 s): auto's own, in a child process meanwhile


def _weightcalc(argv: list[str] | None) -> int:
    p = _parser("tfweightcalc", "Find the weights minimising the mean loss over the training "
                "data by gradient descent, running the GCP on all examples at once.",
                "example:\n  tfweightcalc gcp.tf training_data.txt > weights.txt\n\n"
                + _formats_help())
    p.add_argument("gcp", metavar="GCP.tf", help="a gradient program made by tfcompiler")
    p.add_argument("data", metavar="DATA", help="the training data (inputs and expected "
                   "outputs)")
    _add_settings(p)
    p.add_argument("--log", metavar="FILE", help="write iteration,loss,grad_norm as CSV")
    args = p.parse_args(argv)
    settings = _settings(p, args)
    _check_outputs(p, args, {"GCP.tf": args.gcp, "DATA": args.data})
    gcp_program = api.parse(read_text(args.gcp), args.gcp)
    data = read_data(args.data)
    trainer = api.trainer(gcp_program, data, _engine_for_the_run(gcp_program, data, settings))
    progress = _Progress(sys.stderr.isatty() and not args.quiet, settings.max_iter)
    # the log is written as training goes (the history keeps only every k-th record of a
    # long run), whole or not at all, and also when training stops on an error
    log = OutputFile(args.log) if args.log else None

    def step(trainer: api.GradientDescent, record: Record) -> None:
        progress(trainer, record)
        if log is not None:
            log.write(f"{record.iteration},{record.loss!r},{record.grad_norm!r}\n")

    if log is not None:
        log.write("iteration,loss,grad_norm\n")
    try:
        trainer.run(step)
    finally:
        if log is not None:
            log.commit()
    last = trainer.history[-1]
    if not args.quiet:
        if trainer.converged:
            state = f"converged after {trainer.iterations} iterations"
        elif settings.tol == 0:
            state = f"ran {trainer.iterations} iterations (--tol 0: no convergence test)"
        else:
            state = f"warning: stopped by --max-iter {settings.max_iter} before converging"
        print(f"tfweightcalc: {state}: loss ({trainer.loss_name}) {fmt_number(last.loss)}, "
              f"|grad| {fmt_number(last.grad_norm, 3)} (tol {settings.tol})", file=sys.stderr)
    # in the format the output's extension promises, so that tfevaluate reads it back
    _emit(format_table([trainer.weights], output_format(args.output),
                       args.output or "<stdout>"), args.output)
    return 0


def weightcalc_main(argv: list[str] | None = None) -> int:
    """Entry point of ``tfweightcalc``."""
    return _main(_weightcalc, argv, "tfweightcalc")


# ---------------------------------------------------------------------------- tfevaluate


def _evaluate(argv: list[str] | None) -> int:
    p = _parser("tfevaluate", "Run a TenFlang program once per input record and print its "
                "output and loss values, one record per line (null: no value).",
                "example:\n  tfevaluate shape.tf new_inputs.txt weights.txt\n\n"
                + _formats_help())
    p.add_argument("program", metavar="PROGRAM.tf")
    p.add_argument("inputs", metavar="INPUTS", help="one or more input records")
    p.add_argument("weights", metavar="WEIGHTS", nargs="?",
                   help="the weights (one record, from tfweightcalc); omit it when the "
                        "inputs give the weights")
    args = p.parse_args(argv)
    _check_outputs(p, args, {"PROGRAM.tf": args.program, "INPUTS": args.inputs,
                             "WEIGHTS": args.weights})
    program = api.parse(read_text(args.program), args.program)
    inputs = read_data(args.inputs)
    weights = None
    if args.weights:
        weights = weight_record(program, read_data(args.weights))
    results = api.evaluate(program, inputs, weights)
    if not args.quiet:
        _warn_nonfinite(program, inputs, weights, results)
    _emit(format_table(results, output_format(args.output), args.output or "<stdout>"),
          args.output)
    return 0


def _warn_nonfinite(program: api.Program, inputs: DataTable, weights: dict | None,
                    results: list[dict]) -> None:
    """Say where the first NaN or infinite result came from (e.g. ln of a negative number)."""
    for i, row in enumerate(results):
        for name, value in row.items():
            if value is not None and not np.all(np.isfinite(value)):
                record = inputs.record(i)
                bad = api.first_nonfinite(program, {**record, **(weights or {})}, name)
                where = bad.src.diag(f"'{bad.target}' is NaN or infinite here",
                                     1, severity="warning").render() if bad else ""
                print(f"tfevaluate: warning: record {i + 1}: '{printable(name)}' is not finite"
                      + (f"\n{where}" if where else ""), file=sys.stderr)
                return


def evaluate_main(argv: list[str] | None = None) -> int:
    """Entry point of ``tfevaluate``."""
    return _main(_evaluate, argv, "tfevaluate")
