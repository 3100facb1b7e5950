"""The seed's example shape program, used by the docs, the doctests and the tests.

o = 1 / (1 + e^-(w x)) and the loss lambda = (o - y)^2 (``examples/logistic/shape.tf``).

>>> SEED_EXAMPLE.splitlines()[-1]
'define lambda = pow diff 2'
"""

from __future__ import annotations

__all__ = ["SEED_EXAMPLE"]

SEED_EXAMPLE = """\
declare input x
declare exp_output y
declare weight w
declare intvar z
declare output o
declare intvar diff
declare loss lambda

define z = mul x w
define o = logistic z
define diff = sub o y
define lambda = pow diff 2
"""
