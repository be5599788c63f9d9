// RUN: %fuser-opt --list-passes | FileCheck %s --check-prefix=PASSES
// RUN: %fuser-opt --show-dialects | FileCheck %s --check-prefix=DIALECTS
// RUN: %fuser-opt --version | FileCheck %s --check-prefix=VERSION
// RUN: %fuser-opt --help | FileCheck %s --check-prefix=HELP

// --list-passes lists each fuser pass on one line with its summary, then the
// named pipelines (test_fuser_opt.py checks every registered pass).
// PASSES-LABEL: Passes:
// PASSES:         fuser-verify Check the fuser-dialect invariants that IRDL cannot express.
// PASSES-LABEL: Pipelines:
// PASSES:       Any upstream MLIR pass name is accepted as well

// --show-dialects lists the dialects a fuser-opt context knows, fuser among them.
// DIALECTS-DAG: {{^}}builtin{{$}}
// DIALECTS-DAG: {{^}}func{{$}}
// DIALECTS-DAG: {{^}}fuser{{$}}

// --version names the package and the MLIR bindings.
// VERSION: fuser-opt {{[0-9]+\.[0-9]+\.[0-9]+}} (MLIR bindings {{.+}})

// --help lists the mlir-opt-style flags.
// HELP-LABEL: usage: fuser-opt
// HELP-DAG:   --pass-pipeline
// HELP-DAG:   --split-input-file
// HELP-DAG:   --verify-diagnostics
// HELP-DAG:   --mlir-print-ir-after-all
// HELP-DAG:   --mlir-print-op-generic
// HELP-DAG:   --list-passes
// HELP-DAG:   --show-dialects
