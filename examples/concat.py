"""Concatenation by allocation: two outputs written straight into the halves
of one preallocated buffer, with no copy.

    python examples/concat.py
"""

import numpy as np

from fuser_mlir import DataType, FusionDefinition

with FusionDefinition(name="two_outputs") as fd:
    a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    fd.add_output(fd.ops.exp(a))
    fd.add_output(b * 2.0)

if __name__ == "__main__":
    n = 1 << 20
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = np.empty(2 * n, np.float32)
    fd.execute([a, b], outputs=[out[:n], out[n:]])  # out now holds [exp(a), 2b]
    ref = np.concatenate([np.exp(a.astype(np.float64)), b * 2.0])
    print("max abs error:", float(np.abs(out - ref).max()))
