"""Every exception the package raises on purpose.

All derive from :class:`FuserError`, so a caller can catch the package's errors
with one ``except``. Messages name what is wrong and how to fix it.
"""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun`` for a message, plural unless ``n`` is 1: ``counted(1, "entry") == "1 entry"``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else f"{n} {noun}s"


class FuserError(Exception):
    """Base class of every error fuser-mlir raises on purpose."""


class DialectError(FuserError):
    """The fuser dialect definition could not be found or loaded."""


class VerificationError(FuserError):
    """Fuser IR broke an invariant that ``fuser-verify`` checks."""


class PipelineError(FuserError):
    """A pass pipeline failed or could not be parsed.

    ``diagnostics`` holds the MLIR diagnostics, ``pipeline`` the exact pipeline
    text, and ``reproducer`` the path of the saved input IR (when one was saved).
    """

    def __init__(self, message: str, *, pipeline: str = "", diagnostics: str = "", reproducer: str | None = None):
        parts = [message]
        if pipeline:
            parts.append(f"pipeline: {pipeline}")
        if diagnostics:
            parts.append(diagnostics.rstrip())
        if reproducer is not None:
            parts.append(f"reproducer saved to {reproducer}")
        super().__init__("\n".join(parts))
        self.pipeline = pipeline
        self.diagnostics = diagnostics
        self.reproducer = reproducer


class UnknownPassError(FuserError):
    """A pipeline named a pass that neither fuser-mlir nor MLIR registers."""


class DefinitionError(FuserError):
    """A FusionDefinition was built wrongly (bad op arguments, ops outside ``with``)."""


class InputError(FuserError):
    """Arguments given to a compiled fusion do not match its definition."""


class CompileError(PipelineError):
    """Lowering a fusion to a target failed."""


class CudaError(FuserError):
    """A CUDA driver call failed, or CUDA is not available where it is needed.

    The message names the call and the CUDA error (``CUDA_ERROR_OUT_OF_MEMORY``)."""


class DeviceError(InputError):
    """Arguments live on devices the fusion cannot run on together
    (e.g. NumPy arrays mixed with CUDA tensors)."""


class ArtifactError(FuserError):
    """A compiled artifact (or disk-cache entry) cannot be written or loaded.

    The message names the artifact and the check that failed (format
    version, a file's sha256, a zip entry path, the target, ...)."""


class CacheWarning(UserWarning):
    """The persistent kernel cache skipped or discarded an entry (the fusion
    is compiled again; results are never affected)."""


class ConfigWarning(UserWarning):
    """A ``FUSER_*`` environment knob that only tunes speed has a value
    fuser-mlir cannot use; its default stands in, or for ``FUSER_CPU_THREADS``
    one thread (results are never affected). The message names the variable,
    the value and what it takes."""
