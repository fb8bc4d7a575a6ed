"""
The project's one error path: bad input stops a script with one line naming the problem and the
fix, exit status 1, no traceback, before anything is written.
"""
import os
import sys
from typing import NoReturn


def fail(message: str) -> NoReturn:
    """Stop with one line on stderr and exit status 1, naming the script that stopped."""
    raise SystemExit(f'{os.path.basename(sys.argv[0])}: {message}')


def first_line(e: Exception) -> str:
    """An exception as one line, for the one-line error messages."""
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"
