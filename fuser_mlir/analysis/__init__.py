"""Analyses of fuser IR that several passes and the compiler share.

:mod:`fuser_mlir.analysis.segments`: which ops a segment holds, what it reads
and what escapes it (on IR annotated by ``fuser-segment``), and a plain-Python
description of an outlined host function (``describe_host``).
"""
