"""The fresh process :mod:`.engine` starts: reads the request (the functions' text, the
part to check, the seed) from stdin, defines the functions in a namespace of their own with
``tf`` (the package), ``math`` and ``np``, checks the part, prints the verdict as JSON."""

from __future__ import annotations

import json
import math
import sys

import numpy as np

import tenflang_nb as tf
from tenflang_nb.core.engine_check import check_engine


def main() -> None:
    request = json.loads(sys.stdin.read())
    token = request.pop("token")
    space = {"__name__": "answer", "tf": tf, "math": math, "np": np}
    name = request["name"]
    try:  # the student's own Python: what this process is for
        exec(compile(request["functions"], "<your answer cells>", "exec"), space)
    except Exception as err:  # their code: any error is a verdict
        verdict = {"ok": False, "text": f"✗ {name}: defining your functions failed: "
                                        f"{type(err).__name__}: {err}"}
    else:
        result = check_engine(name, space.get(name), request["seed"], request["programs"])
        verdict = {"ok": result.ok, "text": result.text}
    sys.stdout.write(f"\n{token} {json.dumps(verdict)}\n")


if __name__ == "__main__":
    main()
