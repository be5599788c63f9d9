// The fuser dialect: the single source of truth for op names, operands,
// attributes and results. Loaded into every Context the package creates
// (fuser_mlir/dialect/__init__.py). IRDL has no traits and no verifiers:
// every type rule lives in the fuser-verify pass, and dialect/README.md
// states each op's semantics. Constraint variables unify every place they
// are used, so each operand and result has its own variable.
irdl.dialect @fuser {

  // ---- pointwise unary: one tensor or scalar operand ----
  irdl.operation @abs {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @neg {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @exp {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @exp2 {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @expm1 {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @log {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @log2 {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @log10 {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @log1p {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @sqrt {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @rsqrt {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @reciprocal {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @sin {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @cos {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @tan {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @tanh {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @asin {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @acos {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @atan {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @sinh {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @cosh {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @erf {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @erfc {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @sigmoid {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @relu {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @silu {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @floor {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @ceil {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @round {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @trunc {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @sign {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @isnan {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @isinf {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @isfinite {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @logical_not {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  irdl.operation @bitwise_not {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }

  // ---- pointwise binary: tensors or scalars, size-1 dims broadcast ----
  irdl.operation @add {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @sub {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @mul {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @div {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @pow {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @fmod {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @remainder {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @maximum {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @minimum {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @atan2 {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @eq {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @ne {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @lt {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @le {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @gt {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @ge {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @logical_and {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @logical_or {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @bitwise_and {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @bitwise_or {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }
  irdl.operation @bitwise_xor {
    %lhs = irdl.any
    %rhs = irdl.any
    %result_type = irdl.any
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result_type)
  }

  // ---- pointwise ternary ----
  irdl.operation @where {
    %condition = irdl.any
    %on_true = irdl.any
    %on_false = irdl.any
    %result_type = irdl.any
    irdl.operands(condition: %condition, on_true: %on_true, on_false: %on_false)
    irdl.results(result: %result_type)
  }
  irdl.operation @clamp {
    %input = irdl.any
    %low = irdl.any
    %high = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input, low: %low, high: %high)
    irdl.results(result: %result_type)
  }
  irdl.operation @lerp {
    %start = irdl.any
    %end = irdl.any
    %weight = irdl.any
    %result_type = irdl.any
    irdl.operands(start: %start, end: %end, weight: %weight)
    irdl.results(result: %result_type)
  }

  // ---- data movement and type conversion ----
  // element type conversion; the result type names the target
  irdl.operation @cast {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  // operand dim i becomes result dim broadcast_dims[i]; other result dims are new
  irdl.operation @broadcast_in_dim {
    %input = irdl.any
    %broadcast_dims_attr = irdl.base "#builtin.dense_array"
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.attributes { "broadcast_dims" = %broadcast_dims_attr }
    irdl.results(result: %result_type)
  }
  // result dim i is operand dim dims[i]
  irdl.operation @permute {
    %input = irdl.any
    %dims_attr = irdl.base "#builtin.dense_array"
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.attributes { "dims" = %dims_attr }
    irdl.results(result: %result_type)
  }
  // row-major reshape; one i64 size operand per dynamic result dim
  irdl.operation @reshape {
    %input = irdl.any
    %sizes = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input, sizes: variadic %sizes)
    irdl.results(result: %result_type)
  }
  // a copy of the value (nvFuser's set)
  irdl.operation @set {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }
  // a copy of the value that forces a segment boundary
  irdl.operation @segment_set {
    %input = irdl.any
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.results(result: %result_type)
  }

  // ---- reductions: dims (sorted, unique, non-negative), keepdim ----
  irdl.operation @sum {
    %input = irdl.any
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.results(result: %result_type)
  }
  irdl.operation @prod {
    %input = irdl.any
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.results(result: %result_type)
  }
  irdl.operation @max {
    %input = irdl.any
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.results(result: %result_type)
  }
  irdl.operation @min {
    %input = irdl.any
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.results(result: %result_type)
  }

  // ---- scalars ----
  // a scalar constant; the result type is the value's type
  irdl.operation @constant {
    %value_attr = irdl.any
    %result_type = irdl.any
    irdl.operands()
    irdl.attributes { "value" = %value_attr }
    irdl.results(result: %result_type)
  }
  // the runtime size of one dim, as i64
  irdl.operation @size {
    %input = irdl.any
    %dim_attr = irdl.base "#builtin.integer"
    %result_type = irdl.any
    irdl.operands(input: %input)
    irdl.attributes { "dim" = %dim_attr }
    irdl.results(result: %result_type)
  }

  // ---- destinations (destination-passing style) ----
  // an uninitialised buffer; one i64 size operand per dynamic dim
  irdl.operation @empty {
    %sizes = irdl.any
    %result_type = irdl.any
    irdl.operands(sizes: variadic %sizes)
    irdl.results(result: %result_type)
  }
  // writes a fusion output into its destination; yields the updated destination
  irdl.operation @store {
    %value = irdl.any
    %dest = irdl.any
    %result_type = irdl.any
    irdl.operands(value: %value, dest: %dest)
    irdl.results(result: %result_type)
  }
  // copies source into dest as a step of its own (hazard snapshots); yields dest
  irdl.operation @copy {
    %source = irdl.any
    %dest = irdl.any
    %result_type = irdl.any
    irdl.operands(source: %source, dest: %dest)
    irdl.results(result: %result_type)
  }
}
