"""Scheduler settings for the development scripts: code run in the namespace
of fuser_mlir.lowering.gpu_schedule (``"SHARED_WEIGHT_BYTES = 0"``; a
property of ``_RowGroup`` may be replaced too; ``"import
fuser_mlir.lowering.gpu as g; g.CONTRACT_FMA = False"`` sets one of the
kernel lowering), and undone afterwards. Used by gpu_schedule_sweep.py (a
setting per sweep row), kernel_sass.py and gpu_block_times.py
(``--setting``, one compile; :func:`case_arguments` reads their command lines).
"""

import contextlib

from fuser_mlir.lowering import gpu, gpu_schedule

#: What a setting may change and restore() resets: the schedulers, and the
#: kernel lowering (a setting reaches it as ``import fuser_mlir.lowering.gpu``).
MODULES = (gpu_schedule, gpu)


def snapshot(modules=MODULES) -> list:
    """Each module's names, and the attributes of the classes it defines."""
    saved = []
    for module in modules:
        classes = {v: dict(vars(v)) for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__}
        saved.append((module, dict(vars(module)), classes))
    return saved


def restore(saved: list) -> None:
    """Undo what a setting did: names it added are removed, the others reset."""
    for module, names, classes in saved:
        namespace = vars(module)
        for name in set(namespace) - set(names):
            del namespace[name]
        namespace.update(names)
        for cls, attributes in classes.items():
            for name in set(vars(cls)) - set(attributes):
                delattr(cls, name)
            for name, value in attributes.items():
                if not name.startswith("__"):
                    setattr(cls, name, value)


@contextlib.contextmanager
def applied(setting: str):
    """The schedulers with ``setting`` run in gpu_schedule's namespace, restored afterwards."""
    saved = snapshot()
    try:
        exec(setting, vars(gpu_schedule))
        yield
    finally:
        restore(saved)


def pop_option(args: list[str], flag: str, missing: str) -> str | None:
    """The value after ``flag`` in ``args``, both taken out (None without the
    flag); SystemExit with ``missing`` where no value follows it."""
    if flag not in args:
        return None
    at = args.index(flag)
    if at + 1 >= len(args):
        raise SystemExit(missing)
    value = args.pop(at + 1)
    args.pop(at)
    return value


def case_arguments(argv: list[str], usage: str) -> tuple[str, int, str]:
    """(CASE:DTYPE:HIDDEN, MB (default 256), ``--setting``'s code) from a
    script's remaining arguments (its flags taken out already); SystemExit
    with ``usage`` on anything else."""
    args = list(argv)
    setting = pop_option(args, "--setting", "--setting needs the code to run, e.g. --setting 'SHARED_WEIGHT_BYTES = 0'") or ""
    if not 1 <= len(args) <= 2 or any(a.startswith("--") for a in args) or (len(args) == 2 and not args[1].isdigit()):
        raise SystemExit(usage)
    return args[0], int(args[1]) if len(args) == 2 else 256, setting
