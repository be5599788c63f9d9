"""Command-line tools: ``fuser-opt`` (an mlir-opt for fuser IR) and ``fuser-mlir``."""

import functools
import os
import signal
import sys


def quiet_on_broken_pipe(main):
    """``main`` exiting as ``mlir-opt`` does when the reader of its output
    goes away (``fuser-opt FILE | head``): status 128 + SIGPIPE, no
    traceback. Python would print a ``BrokenPipeError``, and again when it
    flushes stdout at exit, so stdout is pointed at /dev/null first."""

    @functools.wraps(main)
    def wrapped(*args, **kwargs) -> int:
        try:
            status = main(*args, **kwargs)
            sys.stdout.flush()
            return status
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 128 + signal.SIGPIPE

    return wrapped
