"""``fuser-opt``: an mlir-opt-style driver for fuser IR.

Flag names follow mlir-opt: ``-p/--pass-pipeline``, ``--split-input-file``,
``--verify-diagnostics``, ``--mlir-print-ir-after-all``,
``--mlir-print-op-generic``, ``--list-passes``, ``--show-dialects``, ``-o``.
As mlir-opt verifies what it parses, ``fuser-opt`` runs ``fuser-verify``
on each parsed chunk before the pipeline (the fuser dialect's rules live in
that pass, not in op verifiers); ``--mlir-very-unsafe-disable-verifier-on-parsing``
skips it, as in mlir-opt, to feed a pass IR that breaks them.
Exit status: 0 on success, 1 when parsing or the pipeline failed (the
diagnostics go to stderr), 2 on usage errors (an unknown pass among them).
``--verify-diagnostics`` prints the diagnostics to stdout and exits 0, so lit
tests can match them with FileCheck.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from fuser_mlir import __version__
from fuser_mlir._mlir import ir, mlir_version
from fuser_mlir.dialect import make_context
from fuser_mlir.errors import PipelineError, UnknownPassError
from fuser_mlir.passes import REGISTRY
from fuser_mlir.pipeline import PIPELINES, DiagnosticCollector, build_pass_manager, format_diagnostic, run_pipeline
from fuser_mlir.tools import quiet_on_broken_pipe

SPLIT_MARKER = "// -----"
#: A fuser op written in custom form: its name where a statement starts (``%y = fuser.exp %x : ...``).
_CUSTOM_FUSER_OP = re.compile(r"(?:^|=)\s*(fuser\.\w+)")


def split_input(text: str) -> list[str]:
    """Split at ``// -----`` lines, padding each chunk with newlines so that
    diagnostics keep the line numbers of the whole file."""
    chunks, current, start_line = [], [], 0
    for number, line in enumerate(text.splitlines(keepends=True)):
        if line.strip() == SPLIT_MARKER:
            chunks.append("\n" * start_line + "".join(current))
            current, start_line = [], number + 1
            continue
        current.append(line)
    chunks.append("\n" * start_line + "".join(current))
    return chunks


def silent_parse_failure(chunk: str, source_name: str) -> str:
    """The error for a chunk that MLIR failed to parse without a diagnostic.

    The parser says nothing when it meets a fuser op in custom form (the
    dialect is IRDL's, which has no custom assembly), so the first such op
    is named, with the form to write instead."""
    for number, line in enumerate(chunk.splitlines(), 1):
        found = _CUSTOM_FUSER_OP.search(line.split("//", 1)[0])
        if found:
            name = found.group(1)
            return (
                f"{source_name}:{number}:{found.start(1) + 1}: error: '{name}' is written in custom form, which fuser ops do not have "
                f'(the dialect is defined in IRDL); write it in generic form: "{name}"(%operands) : (operand types) -> result type'
            )
    return f"{source_name}: error: the input does not parse, and MLIR gave no reason"


class FuserOptMain:
    """Parses arguments, runs each input chunk through the pipeline, prints."""

    def __init__(self, argv: list[str] | None = None):
        self.args = self.parser().parse_args(argv)
        self.failed = False

    @staticmethod
    def parser() -> argparse.ArgumentParser:
        p = argparse.ArgumentParser(prog="fuser-opt", description="Run pass pipelines on fuser IR (an mlir-opt for fuser-mlir).")
        p.add_argument("input", nargs="?", default="-", help="input file ('-' or absent: stdin)")
        p.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
        p.add_argument("-p", "--pass-pipeline", default="", help="pipeline, e.g. 'fuser-verify,canonicalize' or 'builtin.module(...)'")
        p.add_argument("--split-input-file", action="store_true", help="process each '// -----' chunk separately")
        p.add_argument("--verify-diagnostics", action="store_true", help="print diagnostics to stdout and exit 0")
        p.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
        p.add_argument("--mlir-print-op-generic", action="store_true", help="print ops in generic form")
        p.add_argument(
            "--mlir-very-unsafe-disable-verifier-on-parsing", dest="no_verify_on_parse", action="store_true",
            help="do not run fuser-verify on the parsed input before the pipeline",
        )
        p.add_argument("--list-passes", action="store_true", help="list fuser-mlir's passes and pipelines")
        p.add_argument("--show-dialects", action="store_true", help="list the dialects a fuser-opt context knows")
        p.add_argument("--version", action="version", version=f"fuser-opt {__version__} (MLIR bindings {mlir_version()})")
        return p

    def run(self) -> int:
        if self.args.list_passes:
            return self.list_passes()
        if self.args.show_dialects:
            return self.show_dialects()
        self.check_pipeline()
        text = self.read_input()
        chunks = split_input(text) if self.args.split_input_file else [text]
        to_file = self.args.output != "-"
        if to_file:
            self.check_output()
        printed = []
        for chunk in chunks:
            text = self.process(chunk)
            if text is None:
                continue
            if not to_file:
                print(f"{SPLIT_MARKER}\n{text}" if printed else text, flush=True)
            printed.append(text)
        failed = self.failed and not self.args.verify_diagnostics
        if to_file and not failed:  # as mlir-opt keeps its -o file only on success: a failed run leaves the old one
            self.write_output(f"\n{SPLIT_MARKER}\n".join(printed) + "\n" if printed else "")
        return 1 if failed else 0

    def check_pipeline(self) -> None:
        """Report a bad pipeline (exit 2) before reading any input, as mlir-opt does."""
        if not self.args.pass_pipeline:
            return
        try:
            build_pass_manager(self.args.pass_pipeline, make_context())
        except UnknownPassError as err:
            self.usage_error(str(err))

    def read_input(self) -> str:
        name = "<stdin>" if self.args.input == "-" else f"'{self.args.input}'"
        try:
            if self.args.input == "-":
                if not hasattr(sys.stdin, "buffer"):  # a text stream put in its place
                    return sys.stdin.read()
                data = sys.stdin.buffer.read()
            else:
                with open(self.args.input, "rb") as f:
                    data = f.read()
            return data.decode("utf-8")
        except OSError as err:
            self.usage_error(f"cannot read input file {name}: {err.strerror}")
        except UnicodeDecodeError as err:
            self.usage_error(f"cannot read input file {name}: it is not UTF-8 text ({err.reason} at byte {err.start})")
        return ""  # unreachable

    def check_output(self) -> None:
        """Report an output file that cannot be written (exit 2) before any pass runs."""
        path = Path(self.args.output)
        why = (
            "Is a directory" if path.is_dir()
            else "No such file or directory" if not path.parent.is_dir()
            else "Permission denied" if not os.access(path if path.exists() else path.parent, os.W_OK)
            else None
        )
        if why:
            self.usage_error(f"cannot write output file '{self.args.output}': {why}")

    def write_output(self, text: str) -> None:
        try:
            with open(self.args.output, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as err:
            self.usage_error(f"cannot write output file '{self.args.output}': {err.strerror}")

    def source_name(self) -> str:
        return "<stdin>" if self.args.input == "-" else self.args.input

    def process(self, chunk: str) -> str | None:
        """Parse and run one chunk; the printed IR, or None when it failed."""
        context = make_context()
        echo = _echo_stdout if self.args.verify_diagnostics else _echo_stderr
        with context, ir.Location.unknown():
            with DiagnosticCollector(context, echo=echo, source_name=self.source_name()):
                try:
                    module = ir.Module.parse(chunk)
                except ir.MLIRError as err:
                    # The bindings route parse diagnostics into the exception,
                    # not to the context's handlers.
                    for diag in err.error_diagnostics:
                        echo(format_diagnostic(diag, self.source_name()))
                    if not err.error_diagnostics:
                        echo(silent_parse_failure(chunk, self.source_name()))
                    self.failed = True
                    return None
            try:
                if not self.args.no_verify_on_parse:
                    run_pipeline(module, "fuser-verify", source_name=self.source_name())
                if self.args.pass_pipeline:
                    run_pipeline(
                        module,
                        self.args.pass_pipeline,
                        print_ir_after_all=self.args.mlir_print_ir_after_all,
                        source_name=self.source_name(),
                    )
            except UnknownPassError as err:
                self.usage_error(str(err))
            except PipelineError as err:
                self.failed = True
                echo(err.diagnostics)
                return None
            return module.operation.get_asm(print_generic_op_form=self.args.mlir_print_op_generic).rstrip("\n")

    def list_passes(self) -> int:
        print("Passes:")
        for name, entry in sorted(REGISTRY.items()):
            print(f"  {name:<36} {entry.summary}")
        print("Pipelines:")
        for name, text in sorted(PIPELINES.items()):
            print(f"  {name:<36} {text}")
        print("Any upstream MLIR pass name is accepted as well (e.g. canonicalize, cse).")
        return 0

    def show_dialects(self) -> int:
        context = make_context()
        for name in sorted(_dialect_names(context)):
            print(name)
        return 0

    @staticmethod
    def usage_error(message: str) -> None:
        print(f"fuser-opt: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _dialect_names(context: ir.Context) -> list[str]:
    """The dialects registered in ``context`` plus the loaded fuser dialect."""
    names = {"fuser"}
    # The bindings have no registry listing; probe the names the package uses.
    for name in ("arith", "builtin", "bufferization", "cf", "func", "gpu", "irdl", "linalg", "llvm", "math",
                 "memref", "nvvm", "scf", "tensor", "vector"):
        if context.is_registered_operation(f"{name}.{_PROBE_OPS.get(name, 'constant')}"):
            names.add(name)
    return sorted(names)


_PROBE_OPS = {
    "builtin": "module",
    "bufferization": "alloc_tensor",
    "cf": "br",
    "func": "func",
    "gpu": "launch",
    "irdl": "dialect",
    "linalg": "generic",
    "llvm": "return",
    "math": "exp",
    "memref": "alloc",
    "nvvm": "barrier0",
    "scf": "for",
    "tensor": "empty",
    "vector": "broadcast",
}


def _echo_stdout(text: str) -> None:
    print(text, flush=True)


def _echo_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@quiet_on_broken_pipe
def main(argv: list[str] | None = None) -> int:
    return FuserOptMain(argv).run()


if __name__ == "__main__":
    sys.exit(main())
