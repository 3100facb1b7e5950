"""The backward-pass checker's cost against the length of the answer and the size of the model.

1. Answers of 100 to 10,000 lines to the seed's model, of three forms: a *chain* of helpers
   feeding one wrong adjoint, a *fan* of helpers summed into one wrong adjoint (the blame's
   worst case: every helper is a suspect), and the same fan *right*. The time per line is
   compared with the 100-line answer of the same form, measured in the same run: it should
   stay about flat (linear growth; it grew with the square of the length, a 400-line wrong
   answer took 20-50 s). Targets: 400 wrong lines well under a second, 10,000 in seconds.
2. A model with a 1500 x 1500 weight (its full GCP holds 4.5 million numbers per draw) is
   checked on 5 draws within the check's memory budget; one with a 4000 x 4000 weight is
   refused before anything is allocated, with a hint.

Peak memory is what tracemalloc traces (numpy's buffers included), in a second run of each
case; times are the best of ``--repeat`` runs without tracing.

    python benchmarks/bench_check.py [--lines 100 400 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tracemalloc
from collections.abc import Callable
from typing import Any

from common import machine, one_thread, seconds, table, timed

from tenflang_nb.core.api import check_backprop, parse
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE

SEED = parse(SEED_EXAMPLE, "seed.tf")


def chain(n: int) -> str:
    """``n`` lines: a chain of helpers, the last one the (wrong) adjoint of diff."""
    lines = ["define t0 = mul 2 diff"] + [f"define t{i} = add t{i - 1} 0.001"
                                          for i in range(1, n - 1)]
    return "\n".join([*lines, f"define d/lambda/d/diff = t{n - 2}"])


def fan(n: int, right: bool = False) -> str:
    """About ``n`` lines: n/2 helpers, summed one by one into the adjoint of diff (2 diff
    when ``right``, a little less otherwise)."""
    k = max(2, n // 2)
    share = 2 / k if right else 1.9 / k
    lines = [f"define h{i} = mul {share!r} diff" for i in range(k)]
    lines += ["define s1 = add h0 h1"] + [f"define s{i} = add s{i - 1} h{i}"
                                           for i in range(2, k)]
    return "\n".join([*lines, f"define d/lambda/d/diff = s{k - 1}"])


FORMS: dict[str, tuple[Callable[[int], str], bool]] = {
    "chain (wrong)": (chain, False),
    "fan (wrong)": (lambda n: fan(n), False),
    "fan (right)": (lambda n: fan(n, right=True), True),
}


def peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def big_model(n: int) -> Any:
    return parse(f"declare input x [{n}]\ndeclare weight W [{n}, {n}]\ndeclare intvar z\n"
                 "declare intvar h\ndeclare loss L\ndefine z = matmul x W\n"
                 "define h = tanh z\ndefine L = sum h\n", f"big{n}.tf")


BIG_ANSWER = """\
define d/L/d/h = broadcast 1 h
define hh = mul h h
define slope = sub 1 hh
define d/L/d/z = mul d/L/d/h slope
define d/L/d/W = outer x d/L/d/z
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[100, 400, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"bench_check: answers of {', '.join(f'{n:,}' for n in args.lines)} lines to the "
          f"seed's model; {machine()}")
    rows = []
    verdicts: dict[tuple[str, int], float] = {}
    with one_thread():
        for form, (make, right) in FORMS.items():
            base = None
            for n in args.lines:
                text = make(n)
                lines = text.count("\n") + 1
                repeat = args.repeat if n <= 1000 else 1
                t, result = timed(lambda text=text: check_backprop(SEED, text,
                                                                   require=["diff"]), repeat)
                assert result.ok == right, result.report()[:500]
                per_line = t / lines
                base = base or per_line
                mem = peak_mb(lambda text=text: check_backprop(SEED, text, require=["diff"]))
                verdicts[form, n] = t
                rows.append([form, f"{lines:,}", seconds(t), f"{per_line * 1e6:.0f} us",
                             f"{per_line / base:.2f}", f"{mem:.1f} MB"])
    print(table(rows, ["answer", "lines", "time", "per line", "per line / first", "peak"]))
    print()
    if 400 in args.lines:
        wrong_400 = max(t for (form, n), t in verdicts.items() if n == 400 and "wrong" in form)
        print(f"400 wrong lines: {seconds(wrong_400)} (target < 1 s): "
              f"{'met' if wrong_400 < 1 else 'NOT met'}")
    if 10000 in args.lines:
        worst = max(t for (_, n), t in verdicts.items() if n == 10000)
        print(f"10,000 lines: {seconds(worst)} (target: seconds, < 10 s): "
              f"{'met' if worst < 10 else 'NOT met'}")

    print()
    model = big_model(1500)
    t, result = timed(lambda: check_backprop(model, BIG_ANSWER))
    assert result.ok, result.report()
    mem = peak_mb(lambda: check_backprop(model, BIG_ANSWER))
    print(f"1500 x 1500 weight, 5 draws: {seconds(t)}, peak {mem:,.0f} MB, {result.headline()}")
    model = big_model(4000)
    t, error = timed(lambda: _refusal(model))
    print(f"4000 x 4000 weight: refused in {seconds(t)}: {error}")


def _refusal(model: Any) -> str:
    try:
        check_backprop(model, BIG_ANSWER)
    except TenFlangError as err:
        return str(err).replace("\n", " / ")
    raise AssertionError("a check too large for memory ran")


if __name__ == "__main__":
    main()
