"""Is there an event loop a live training run can use? (The magic and the panel both ask.)"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["kernel_loop_running", "live_loop"]


def live_loop(shell: Any = None) -> asyncio.AbstractEventLoop | None:
    """The running loop of a Jupyter kernel, or None where nothing would run a task.

    Terminal IPython runs a loop only while an ``await`` cell executes, so a task created
    there would freeze until the next such cell; scripts and ``InteractiveShell`` tests have
    none. Without any IPython shell (a test driving the panel with ``asyncio.run``), a
    running loop is used as it is.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None and getattr(shell, "kernel", None) is None:
        return None
    return loop


def kernel_loop_running(shell: Any) -> bool:
    """True inside a Jupyter kernel whose event loop runs (live training is possible there);
    False in terminal IPython, scripts and ``InteractiveShell`` tests.

    >>> kernel_loop_running(None)
    False
    """
    return live_loop(shell) is not None
