"""The ``tenflang-course`` command: ``new``, ``solve``, ``report`` (see the teachers' page).

Exit status: 0 success, 1 the course or a file is not as the command needs (the message
names it), 2 bad usage. No traceback: a failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .new import CourseError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tenflang-course", description="A TenFlang nbgrader course: make it, check it, "
        "look at its submissions.")
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser("new", help="write a ready nbgrader course into DIR")
    new.add_argument("dir", metavar="DIR", help="a new or empty folder")
    new.add_argument("--secret", metavar="S", help="the course's secret: it enters every "
                     "student's numbers (default: a fresh random one)")
    solve = commands.add_parser("solve", help="write a right submission for STUDENT into "
                                "submitted/ (the teacher's check of the set-up)")
    for sub in (solve,):
        sub.add_argument("dir", metavar="DIR", help="the course folder")
        sub.add_argument("assignment", metavar="ASSIGNMENT")
        sub.add_argument("student", metavar="STUDENT")
    report = commands.add_parser("report", help="per student, what a lecturer should look at")
    report.add_argument("dir", metavar="DIR", help="the course folder")
    report.add_argument("assignment", metavar="ASSIGNMENT")
    report.add_argument("--json", action="store_true", help="as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "new":
            from .new import new_course

            folder = new_course(args.dir, args.secret)
            print(f"A TenFlang course in {folder}: its secret is in {folder}/.tenflang-secret "
                  "(keep it; the grader reads it). Next: cd into it, nbgrader generate_assignment "
                  "05_exercises (06_when_training_fails, 07_your_own_engine).")
        elif args.command == "solve":
            from .solve import solve

            print(f"wrote {solve(args.dir, args.assignment, args.student)}")
        else:
            from .report import as_json, as_text, report

            found = report(args.dir, args.assignment)
            sys.stdout.write(json.dumps(as_json(found, args.assignment), indent=1) + "\n"
                             if args.json else as_text(found, args.assignment))
    except CourseError as err:
        print(f"tenflang-course: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"tenflang-course: error: {where}{err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
