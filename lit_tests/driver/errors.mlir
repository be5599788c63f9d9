// RUN: %exit-status %fuser-opt %s -p fuser-verfy | FileCheck %s --check-prefix=UNKNOWN
// RUN: %exit-status %fuser-opt %s -p 'fuser-verify,func.func(csee)' | FileCheck %s --check-prefix=NESTED
// RUN: %exit-status %fuser-opt %s -p 'fuser-verify{bogus=1}' | FileCheck %s --check-prefix=OPTION
// RUN: %exit-status %fuser-opt %s -p 'func.func(fuser-verify)' | FileCheck %s --check-prefix=ANCHOR
// RUN: %exit-status %fuser-opt %s.missing | FileCheck %s --check-prefix=MISSING
// RUN: %exit-status %fuser-opt %s | FileCheck %s --check-prefix=PARSE
// RUN: not %fuser-opt %s 2>&1 | FileCheck %s --check-prefix=PARSE-LOC

// Usage errors exit with status 2 and say what to fix; an unknown pass gets
// the close matches among fuser's and MLIR's pass names. The pipeline is
// checked before the input is read, so this unparsable file does not matter.
// UNKNOWN-LABEL: fuser-opt: error: unknown pass or pipeline 'fuser-verfy'; did you mean 'fuser-verify'? (fuser-opt --list-passes lists fuser-mlir's passes)
// UNKNOWN:       exit status: 2
// NESTED-LABEL:  fuser-opt: error: unknown pass or pipeline 'csee'; did you mean 'cse'?
// NESTED:        exit status: 2
// OPTION-LABEL:  fuser-opt: error: pass 'fuser-verify' has no option 'bogus' (options: none)
// OPTION:        exit status: 2
// ANCHOR-LABEL:  fuser-opt: error: 'fuser-verify' is a fuser-mlir pass, which runs on the whole module and cannot be nested in 'func.func(...)'; list it at the top level of the pipeline
// ANCHOR:        exit status: 2
// MISSING-LABEL: fuser-opt: error: cannot read input file '{{.*}}errors.mlir.missing': No such file or directory
// MISSING:       exit status: 2

// A file that does not parse exits with status 1 and the parser's diagnostic.
// PARSE-LABEL:   error: unregistered operation 'fuser.frobnicate' found in dialect ('fuser')
// PARSE:         exit status: 1
// PARSE-LOC:     errors.mlir:[[@LINE+2]]:8: error: unregistered operation
func.func @unparsable(%x: f32) -> f32 {
  %0 = "fuser.frobnicate"(%x) : (f32) -> f32
  return %0 : f32
}
