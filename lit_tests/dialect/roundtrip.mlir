// RUN: %fuser-opt %s -p fuser-verify --split-input-file | %fuser-opt --split-input-file | FileCheck %s
// RUN: %fuser-opt %s --split-input-file --mlir-print-op-generic | %fuser-opt --split-input-file | FileCheck %s

// Every op of the fuser dialect (dialect/fuser.irdl.mlir) parses, passes
// fuser-verify, prints, and parses again from its printed form (custom and
// generic). test/test_dialect.py checks that this file names every op.

// Unary float ops round-trip; each keeps its operand's type.

// fuser.exp: e^x on f32.
// CHECK-LABEL: func.func @exp(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.exp"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @exp(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.exp2: 2^x on f16.
// CHECK-LABEL: func.func @exp2(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf16>)
// CHECK:         %[[R:.*]] = "fuser.exp2"(%[[X]]) : (tensor<?x4xf16>) -> tensor<?x4xf16>
// CHECK:         return %[[R]] : tensor<?x4xf16>
func.func @exp2(%x: tensor<?x4xf16>) -> tensor<?x4xf16> {
  %r = "fuser.exp2"(%x) : (tensor<?x4xf16>) -> tensor<?x4xf16>
  return %r : tensor<?x4xf16>
}

// fuser.expm1: e^x - 1 on bf16.
// CHECK-LABEL: func.func @expm1(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xbf16>)
// CHECK:         %[[R:.*]] = "fuser.expm1"(%[[X]]) : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
// CHECK:         return %[[R]] : tensor<?x4xbf16>
func.func @expm1(%x: tensor<?x4xbf16>) -> tensor<?x4xbf16> {
  %r = "fuser.expm1"(%x) : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
  return %r : tensor<?x4xbf16>
}

// fuser.log: Natural log on f64.
// CHECK-LABEL: func.func @log(
// CHECK-SAME:    %[[X:.*]]: tensor<?xf64>)
// CHECK:         %[[R:.*]] = "fuser.log"(%[[X]]) : (tensor<?xf64>) -> tensor<?xf64>
// CHECK:         return %[[R]] : tensor<?xf64>
func.func @log(%x: tensor<?xf64>) -> tensor<?xf64> {
  %r = "fuser.log"(%x) : (tensor<?xf64>) -> tensor<?xf64>
  return %r : tensor<?xf64>
}

// fuser.log2: Base-2 log on a scalar.
// CHECK-LABEL: func.func @log2(
// CHECK-SAME:    %[[X:.*]]: f32)
// CHECK:         %[[R:.*]] = "fuser.log2"(%[[X]]) : (f32) -> f32
// CHECK:         return %[[R]] : f32
func.func @log2(%x: f32) -> f32 {
  %r = "fuser.log2"(%x) : (f32) -> f32
  return %r : f32
}

// fuser.log10: Base-10 log on a 0-d tensor.
// CHECK-LABEL: func.func @log10(
// CHECK-SAME:    %[[X:.*]]: tensor<f32>)
// CHECK:         %[[R:.*]] = "fuser.log10"(%[[X]]) : (tensor<f32>) -> tensor<f32>
// CHECK:         return %[[R]] : tensor<f32>
func.func @log10(%x: tensor<f32>) -> tensor<f32> {
  %r = "fuser.log10"(%x) : (tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// fuser.log1p: log(1 + x) with a broadcast dim.
// CHECK-LABEL: func.func @log1p(
// CHECK-SAME:    %[[X:.*]]: tensor<?x1xf32>)
// CHECK:         %[[R:.*]] = "fuser.log1p"(%[[X]]) : (tensor<?x1xf32>) -> tensor<?x1xf32>
// CHECK:         return %[[R]] : tensor<?x1xf32>
func.func @log1p(%x: tensor<?x1xf32>) -> tensor<?x1xf32> {
  %r = "fuser.log1p"(%x) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  return %r : tensor<?x1xf32>
}

// fuser.sqrt: Square root.
// CHECK-LABEL: func.func @sqrt(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.sqrt"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @sqrt(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.sqrt"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.rsqrt: Reciprocal square root.
// CHECK-LABEL: func.func @rsqrt(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.rsqrt"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @rsqrt(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.rsqrt"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.reciprocal: 1 / x.
// CHECK-LABEL: func.func @reciprocal(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.reciprocal"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @reciprocal(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.reciprocal"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.sin: Sine.
// CHECK-LABEL: func.func @sin(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.sin"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @sin(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.sin"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.cos: Cosine.
// CHECK-LABEL: func.func @cos(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.cos"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @cos(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.cos"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.tan: Tangent.
// CHECK-LABEL: func.func @tan(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.tan"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @tan(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.tan"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.tanh: Hyperbolic tangent.
// CHECK-LABEL: func.func @tanh(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.tanh"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @tanh(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.tanh"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.asin: Arc sine.
// CHECK-LABEL: func.func @asin(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.asin"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @asin(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.asin"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.acos: Arc cosine.
// CHECK-LABEL: func.func @acos(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.acos"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @acos(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.acos"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.atan: Arc tangent.
// CHECK-LABEL: func.func @atan(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.atan"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @atan(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.atan"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.sinh: Hyperbolic sine.
// CHECK-LABEL: func.func @sinh(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.sinh"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @sinh(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.sinh"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.cosh: Hyperbolic cosine.
// CHECK-LABEL: func.func @cosh(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.cosh"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @cosh(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.cosh"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.erf: Error function.
// CHECK-LABEL: func.func @erf(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.erf"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @erf(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.erf"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.erfc: Complementary error function.
// CHECK-LABEL: func.func @erfc(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.erfc"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @erfc(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.erfc"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.sigmoid: 1 / (1 + exp(-x)).
// CHECK-LABEL: func.func @sigmoid(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.sigmoid"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @sigmoid(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.sigmoid"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.silu: x * sigmoid(x).
// CHECK-LABEL: func.func @silu(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.silu"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @silu(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.silu"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.floor: Round down.
// CHECK-LABEL: func.func @floor(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.floor"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @floor(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.floor"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.ceil: Round up.
// CHECK-LABEL: func.func @ceil(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.ceil"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @ceil(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.ceil"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.round: Round half to even.
// CHECK-LABEL: func.func @round(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.round"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @round(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.round"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.trunc: Round toward zero.
// CHECK-LABEL: func.func @trunc(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.trunc"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @trunc(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.trunc"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// Unary ops on any number round-trip.

// fuser.abs: Absolute value of an integer tensor.
// CHECK-LABEL: func.func @abs(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xi32>)
// CHECK:         %[[R:.*]] = "fuser.abs"(%[[X]]) : (tensor<?x4xi32>) -> tensor<?x4xi32>
// CHECK:         return %[[R]] : tensor<?x4xi32>
func.func @abs(%x: tensor<?x4xi32>) -> tensor<?x4xi32> {
  %r = "fuser.abs"(%x) : (tensor<?x4xi32>) -> tensor<?x4xi32>
  return %r : tensor<?x4xi32>
}

// fuser.neg: Negation of an i64 tensor.
// CHECK-LABEL: func.func @neg(
// CHECK-SAME:    %[[X:.*]]: tensor<8xi64>)
// CHECK:         %[[R:.*]] = "fuser.neg"(%[[X]]) : (tensor<8xi64>) -> tensor<8xi64>
// CHECK:         return %[[R]] : tensor<8xi64>
func.func @neg(%x: tensor<8xi64>) -> tensor<8xi64> {
  %r = "fuser.neg"(%x) : (tensor<8xi64>) -> tensor<8xi64>
  return %r : tensor<8xi64>
}

// fuser.relu: max(x, 0) on f32.
// CHECK-LABEL: func.func @relu(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.relu"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @relu(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.relu"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.sign: Sign of a float scalar.
// CHECK-LABEL: func.func @sign(
// CHECK-SAME:    %[[X:.*]]: f64)
// CHECK:         %[[R:.*]] = "fuser.sign"(%[[X]]) : (f64) -> f64
// CHECK:         return %[[R]] : f64
func.func @sign(%x: f64) -> f64 {
  %r = "fuser.sign"(%x) : (f64) -> f64
  return %r : f64
}

// -----

// Unary predicates round-trip with an i1 result.

// fuser.isnan: NaN test: f32 in, i1 out.
// CHECK-LABEL: func.func @isnan(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.isnan"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @isnan(%x: tensor<?x4xf32>) -> tensor<?x4xi1> {
  %r = "fuser.isnan"(%x) : (tensor<?x4xf32>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.isinf: Infinity test on f16: i1 out.
// CHECK-LABEL: func.func @isinf(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf16>)
// CHECK:         %[[R:.*]] = "fuser.isinf"(%[[X]]) : (tensor<?x4xf16>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @isinf(%x: tensor<?x4xf16>) -> tensor<?x4xi1> {
  %r = "fuser.isinf"(%x) : (tensor<?x4xf16>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.isfinite: Finite test on bf16: i1 out.
// CHECK-LABEL: func.func @isfinite(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xbf16>)
// CHECK:         %[[R:.*]] = "fuser.isfinite"(%[[X]]) : (tensor<?x4xbf16>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @isfinite(%x: tensor<?x4xbf16>) -> tensor<?x4xi1> {
  %r = "fuser.isfinite"(%x) : (tensor<?x4xbf16>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// -----

// Unary logical and bitwise ops round-trip.

// fuser.logical_not: Logical not of an i1 tensor.
// CHECK-LABEL: func.func @logical_not(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xi1>)
// CHECK:         %[[R:.*]] = "fuser.logical_not"(%[[X]]) : (tensor<?x4xi1>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @logical_not(%x: tensor<?x4xi1>) -> tensor<?x4xi1> {
  %r = "fuser.logical_not"(%x) : (tensor<?x4xi1>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.bitwise_not: Bitwise not of an i32 tensor.
// CHECK-LABEL: func.func @bitwise_not(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xi32>)
// CHECK:         %[[R:.*]] = "fuser.bitwise_not"(%[[X]]) : (tensor<?x4xi32>) -> tensor<?x4xi32>
// CHECK:         return %[[R]] : tensor<?x4xi32>
func.func @bitwise_not(%x: tensor<?x4xi32>) -> tensor<?x4xi32> {
  %r = "fuser.bitwise_not"(%x) : (tensor<?x4xi32>) -> tensor<?x4xi32>
  return %r : tensor<?x4xi32>
}

// -----

// Binary numeric ops round-trip, with broadcast dims and scalar operands.

// fuser.add: Size-1 dims of both operands broadcast to the result shape.
// CHECK-LABEL: func.func @add(
// CHECK-SAME:    %[[A:.*]]: tensor<?x1xf32>, %[[B:.*]]: tensor<1x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.add"(%[[A]], %[[B]]) : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @add(%a: tensor<?x1xf32>, %b: tensor<1x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.add"(%a, %b) : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.sub: A scalar operand broadcasts against a tensor.
// CHECK-LABEL: func.func @sub(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: f32)
// CHECK:         %[[R:.*]] = "fuser.sub"(%[[A]], %[[B]]) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @sub(%a: tensor<?x4xf32>, %b: f32) -> tensor<?x4xf32> {
  %r = "fuser.sub"(%a, %b) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.mul: Integer multiply of two dynamic tensors.
// CHECK-LABEL: func.func @mul(
// CHECK-SAME:    %[[A:.*]]: tensor<?x?xi64>, %[[B:.*]]: tensor<?x?xi64>)
// CHECK:         %[[R:.*]] = "fuser.mul"(%[[A]], %[[B]]) : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
// CHECK:         return %[[R]] : tensor<?x?xi64>
func.func @mul(%a: tensor<?x?xi64>, %b: tensor<?x?xi64>) -> tensor<?x?xi64> {
  %r = "fuser.mul"(%a, %b) : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  return %r : tensor<?x?xi64>
}

// fuser.pow: x ** y on f64 scalars.
// CHECK-LABEL: func.func @pow(
// CHECK-SAME:    %[[A:.*]]: f64, %[[B:.*]]: f64)
// CHECK:         %[[R:.*]] = "fuser.pow"(%[[A]], %[[B]]) : (f64, f64) -> f64
// CHECK:         return %[[R]] : f64
func.func @pow(%a: f64, %b: f64) -> f64 {
  %r = "fuser.pow"(%a, %b) : (f64, f64) -> f64
  return %r : f64
}

// fuser.fmod: C fmod on f32.
// CHECK-LABEL: func.func @fmod(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.fmod"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @fmod(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.fmod"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.remainder: Python-style remainder on i32.
// CHECK-LABEL: func.func @remainder(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi32>, %[[B:.*]]: tensor<?x4xi32>)
// CHECK:         %[[R:.*]] = "fuser.remainder"(%[[A]], %[[B]]) : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
// CHECK:         return %[[R]] : tensor<?x4xi32>
func.func @remainder(%a: tensor<?x4xi32>, %b: tensor<?x4xi32>) -> tensor<?x4xi32> {
  %r = "fuser.remainder"(%a, %b) : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
  return %r : tensor<?x4xi32>
}

// fuser.maximum: NaN-propagating maximum.
// CHECK-LABEL: func.func @maximum(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.maximum"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @maximum(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.maximum"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.minimum: NaN-propagating minimum.
// CHECK-LABEL: func.func @minimum(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.minimum"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @minimum(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.minimum"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// Binary float-only ops round-trip.

// fuser.div: True division of floats.
// CHECK-LABEL: func.func @div(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.div"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @div(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.div"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.atan2: atan2(y, x) on f32.
// CHECK-LABEL: func.func @atan2(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.atan2"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @atan2(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.atan2"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// Comparisons round-trip with an i1 result.

// fuser.eq: Comparison 'eq' gives i1 whatever the operand type.
// CHECK-LABEL: func.func @eq(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi32>, %[[B:.*]]: tensor<?x4xi32>)
// CHECK:         %[[R:.*]] = "fuser.eq"(%[[A]], %[[B]]) : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @eq(%a: tensor<?x4xi32>, %b: tensor<?x4xi32>) -> tensor<?x4xi1> {
  %r = "fuser.eq"(%a, %b) : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.ne: Comparison 'ne' gives i1 whatever the operand type.
// CHECK-LABEL: func.func @ne(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi1>, %[[B:.*]]: tensor<?x4xi1>)
// CHECK:         %[[R:.*]] = "fuser.ne"(%[[A]], %[[B]]) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @ne(%a: tensor<?x4xi1>, %b: tensor<?x4xi1>) -> tensor<?x4xi1> {
  %r = "fuser.ne"(%a, %b) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.lt: Comparison 'lt' gives i1 whatever the operand type.
// CHECK-LABEL: func.func @lt(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.lt"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @lt(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xi1> {
  %r = "fuser.lt"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.le: Comparison 'le' gives i1 whatever the operand type.
// CHECK-LABEL: func.func @le(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.le"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @le(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xi1> {
  %r = "fuser.le"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.gt: Comparison 'gt' gives i1 whatever the operand type.
// CHECK-LABEL: func.func @gt(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.gt"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @gt(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xi1> {
  %r = "fuser.gt"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.ge: Comparison 'ge' gives i1 whatever the operand type.
// CHECK-LABEL: func.func @ge(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.ge"(%[[A]], %[[B]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @ge(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xi1> {
  %r = "fuser.ge"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// -----

// Binary logical and bitwise ops round-trip.

// fuser.logical_and: Logical and of i1 tensors.
// CHECK-LABEL: func.func @logical_and(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi1>, %[[B:.*]]: tensor<?x4xi1>)
// CHECK:         %[[R:.*]] = "fuser.logical_and"(%[[A]], %[[B]]) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @logical_and(%a: tensor<?x4xi1>, %b: tensor<?x4xi1>) -> tensor<?x4xi1> {
  %r = "fuser.logical_and"(%a, %b) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.logical_or: Logical or of i1 tensors.
// CHECK-LABEL: func.func @logical_or(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi1>, %[[B:.*]]: tensor<?x4xi1>)
// CHECK:         %[[R:.*]] = "fuser.logical_or"(%[[A]], %[[B]]) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @logical_or(%a: tensor<?x4xi1>, %b: tensor<?x4xi1>) -> tensor<?x4xi1> {
  %r = "fuser.logical_or"(%a, %b) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.bitwise_and: Bitwise and of i32 tensors.
// CHECK-LABEL: func.func @bitwise_and(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi32>, %[[B:.*]]: tensor<?x4xi32>)
// CHECK:         %[[R:.*]] = "fuser.bitwise_and"(%[[A]], %[[B]]) : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
// CHECK:         return %[[R]] : tensor<?x4xi32>
func.func @bitwise_and(%a: tensor<?x4xi32>, %b: tensor<?x4xi32>) -> tensor<?x4xi32> {
  %r = "fuser.bitwise_and"(%a, %b) : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
  return %r : tensor<?x4xi32>
}

// fuser.bitwise_or: Bitwise or of i1 tensors.
// CHECK-LABEL: func.func @bitwise_or(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi1>, %[[B:.*]]: tensor<?x4xi1>)
// CHECK:         %[[R:.*]] = "fuser.bitwise_or"(%[[A]], %[[B]]) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
// CHECK:         return %[[R]] : tensor<?x4xi1>
func.func @bitwise_or(%a: tensor<?x4xi1>, %b: tensor<?x4xi1>) -> tensor<?x4xi1> {
  %r = "fuser.bitwise_or"(%a, %b) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
  return %r : tensor<?x4xi1>
}

// fuser.bitwise_xor: Bitwise xor of an i64 tensor and an i64 scalar.
// CHECK-LABEL: func.func @bitwise_xor(
// CHECK-SAME:    %[[A:.*]]: tensor<?x4xi64>, %[[B:.*]]: i64)
// CHECK:         %[[R:.*]] = "fuser.bitwise_xor"(%[[A]], %[[B]]) : (tensor<?x4xi64>, i64) -> tensor<?x4xi64>
// CHECK:         return %[[R]] : tensor<?x4xi64>
func.func @bitwise_xor(%a: tensor<?x4xi64>, %b: i64) -> tensor<?x4xi64> {
  %r = "fuser.bitwise_xor"(%a, %b) : (tensor<?x4xi64>, i64) -> tensor<?x4xi64>
  return %r : tensor<?x4xi64>
}

// -----

// Ternary ops round-trip.

// fuser.where: Select by an i1 condition; the values may be scalars.
// CHECK-LABEL: func.func @where(
// CHECK-SAME:    %[[C:.*]]: tensor<?x4xi1>, %[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: f32)
// CHECK:         %[[R:.*]] = "fuser.where"(%[[C]], %[[A]], %[[B]]) : (tensor<?x4xi1>, tensor<?x4xf32>, f32) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @where(%c: tensor<?x4xi1>, %a: tensor<?x4xf32>, %b: f32) -> tensor<?x4xf32> {
  %r = "fuser.where"(%c, %a, %b) : (tensor<?x4xi1>, tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.clamp: Clamp between two scalar bounds.
// CHECK-LABEL: func.func @clamp(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[LO:.*]]: f32, %[[HI:.*]]: f32)
// CHECK:         %[[R:.*]] = "fuser.clamp"(%[[X]], %[[LO]], %[[HI]]) : (tensor<?x4xf32>, f32, f32) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @clamp(%x: tensor<?x4xf32>, %lo: f32, %hi: f32) -> tensor<?x4xf32> {
  %r = "fuser.clamp"(%x, %lo, %hi) : (tensor<?x4xf32>, f32, f32) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.lerp: Linear interpolation with a broadcast weight.
// CHECK-LABEL: func.func @lerp(
// CHECK-SAME:    %[[S:.*]]: tensor<?x4xf32>, %[[E:.*]]: tensor<?x4xf32>, %[[W:.*]]: tensor<1x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.lerp"(%[[S]], %[[E]], %[[W]]) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @lerp(%s: tensor<?x4xf32>, %e: tensor<?x4xf32>, %w: tensor<1x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.lerp"(%s, %e, %w) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// Type conversion round-trips.

// fuser.cast: Convert f32 to bf16; the shape is unchanged.
// CHECK-LABEL: func.func @cast(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.cast"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xbf16>
// CHECK:         return %[[R]] : tensor<?x4xbf16>
func.func @cast(%x: tensor<?x4xf32>) -> tensor<?x4xbf16> {
  %r = "fuser.cast"(%x) : (tensor<?x4xf32>) -> tensor<?x4xbf16>
  return %r : tensor<?x4xbf16>
}

// -----

// Layout ops round-trip with their attributes.

// fuser.broadcast_in_dim: Operand dim 0 becomes result dim 1; result dim 0 is a new broadcast dim.
// CHECK-LABEL: func.func @broadcast_in_dim(
// CHECK-SAME:    %[[X:.*]]: tensor<?xf32>)
// CHECK:         %[[R:.*]] = "fuser.broadcast_in_dim"(%[[X]]) {broadcast_dims = array<i64: 1>} : (tensor<?xf32>) -> tensor<1x?xf32>
// CHECK:         return %[[R]] : tensor<1x?xf32>
func.func @broadcast_in_dim(%x: tensor<?xf32>) -> tensor<1x?xf32> {
  %r = "fuser.broadcast_in_dim"(%x) {broadcast_dims = array<i64: 1>} : (tensor<?xf32>) -> tensor<1x?xf32>
  return %r : tensor<1x?xf32>
}

// fuser.permute: Swap the two dims.
// CHECK-LABEL: func.func @permute(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.permute"(%[[X]]) {dims = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
// CHECK:         return %[[R]] : tensor<4x?xf32>
func.func @permute(%x: tensor<?x4xf32>) -> tensor<4x?xf32> {
  %r = "fuser.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  return %r : tensor<4x?xf32>
}

// fuser.reshape: Flatten; one i64 size operand per dynamic result dim.
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[N:.*]]: i64)
// CHECK:         %[[R:.*]] = "fuser.reshape"(%[[X]], %[[N]]) : (tensor<?x4xf32>, i64) -> tensor<?xf32>
// CHECK:         return %[[R]] : tensor<?xf32>
func.func @reshape(%x: tensor<?x4xf32>, %n: i64) -> tensor<?xf32> {
  %r = "fuser.reshape"(%x, %n) : (tensor<?x4xf32>, i64) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Value copies round-trip.

// fuser.set: A copy of the value.
// CHECK-LABEL: func.func @set(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.set"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @set(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.set"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.segment_set: A copy that forces a segment boundary.
// CHECK-LABEL: func.func @segment_set(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.segment_set"(%[[X]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @segment_set(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.segment_set"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// Reductions round-trip with dims and keepdim.

// fuser.sum: Sum over dim 1 without keepdim.
// CHECK-LABEL: func.func @sum(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.sum"(%[[X]]) {dims = array<i64: 1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<?xf32>
// CHECK:         return %[[R]] : tensor<?xf32>
func.func @sum(%x: tensor<?x4xf32>) -> tensor<?xf32> {
  %r = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// fuser.prod: Product over dim 0, keeping it as size 1.
// CHECK-LABEL: func.func @prod(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.prod"(%[[X]]) {dims = array<i64: 0>, keepdim = true} : (tensor<?x4xf32>) -> tensor<1x4xf32>
// CHECK:         return %[[R]] : tensor<1x4xf32>
func.func @prod(%x: tensor<?x4xf32>) -> tensor<1x4xf32> {
  %r = "fuser.prod"(%x) {dims = array<i64: 0>, keepdim = true} : (tensor<?x4xf32>) -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// fuser.max: A full reduction gives a 0-d tensor.
// CHECK-LABEL: func.func @max(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.max"(%[[X]]) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<f32>
// CHECK:         return %[[R]] : tensor<f32>
func.func @max(%x: tensor<?x4xf32>) -> tensor<f32> {
  %r = "fuser.max"(%x) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// fuser.min: Integer min over the last dim.
// CHECK-LABEL: func.func @min(
// CHECK-SAME:    %[[X:.*]]: tensor<2x?x8xi32>)
// CHECK:         %[[R:.*]] = "fuser.min"(%[[X]]) {dims = array<i64: 2>, keepdim = false} : (tensor<2x?x8xi32>) -> tensor<2x?xi32>
// CHECK:         return %[[R]] : tensor<2x?xi32>
func.func @min(%x: tensor<2x?x8xi32>) -> tensor<2x?xi32> {
  %r = "fuser.min"(%x) {dims = array<i64: 2>, keepdim = false} : (tensor<2x?x8xi32>) -> tensor<2x?xi32>
  return %r : tensor<2x?xi32>
}

// -----

// Scalar ops round-trip.

// fuser.constant: A scalar constant of the value's type.
// CHECK-LABEL: func.func @constant(
// CHECK:         %[[R:.*]] = "fuser.constant"() {value = 2.500000e+00 : f32} : () -> f32
// CHECK:         return %[[R]] : f32
func.func @constant() -> f32 {
  %r = "fuser.constant"() {value = 2.500000e+00 : f32} : () -> f32
  return %r : f32
}

// fuser.size: The runtime size of dim 0, as i64.
// CHECK-LABEL: func.func @size(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.size"(%[[X]]) {dim = 0 : i64} : (tensor<?x4xf32>) -> i64
// CHECK:         return %[[R]] : i64
func.func @size(%x: tensor<?x4xf32>) -> i64 {
  %r = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x4xf32>) -> i64
  return %r : i64
}

// -----

// Destination ops round-trip.

// fuser.empty: An uninitialised buffer with one size operand per dynamic dim.
// CHECK-LABEL: func.func @empty(
// CHECK-SAME:    %[[N:.*]]: i64)
// CHECK:         %[[R:.*]] = "fuser.empty"(%[[N]]) : (i64) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @empty(%n: i64) -> tensor<?x4xf32> {
  %r = "fuser.empty"(%n) : (i64) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.store: Store a value into a fuser.empty destination.
// CHECK-LABEL: func.func @store(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[N:.*]]: i64)
// CHECK:         %[[D:.*]] = "fuser.empty"(%[[N]]) : (i64) -> tensor<?x4xf32>
// CHECK:         %[[R:.*]] = "fuser.store"(%[[X]], %[[D]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @store(%x: tensor<?x4xf32>, %n: i64) -> tensor<?x4xf32> {
  %d = "fuser.empty"(%n) : (i64) -> tensor<?x4xf32>
  %r = "fuser.store"(%x, %d) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// fuser.copy: Copy a value into a destination argument as a step of its own.
// CHECK-LABEL: func.func @copy(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[OUT:.*]]: tensor<?x4xf32>)
// CHECK:         %[[R:.*]] = "fuser.copy"(%[[X]], %[[OUT]]) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         return %[[R]] : tensor<?x4xf32>
func.func @copy(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "fuser.copy"(%x, %out) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
