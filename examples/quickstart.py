"""Quick start: define a fusion, run it on NumPy arrays, look at what it became.

    python examples/quickstart.py
    fuser-mlir show-segments examples/quickstart.py     # draws the segments
"""

import numpy as np

from fuser_mlir import DataType, FusionDefinition

# Layer norm written from primitives: one segment, so one kernel that reads
# each row once (the statistics, then the normalised row).
with FusionDefinition(name="layer_norm") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    weight = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    bias = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=True)
    y = (x - mean) * fd.ops.rsqrt(var + 1e-5)
    fd.add_output(y * weight + bias)

if __name__ == "__main__":
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((128, 512)).astype(np.float32)
    w = rng.standard_normal(512).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    (out,) = fd.execute([xs, w, b])

    x64 = xs.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * w + b
    print("max abs error vs float64 NumPy:", float(np.abs(out - ref).max()))

    compiled = fd.compile([xs, w, b])
    print(f"{compiled.num_segments} segments")
    print(compiled.plan.describe())
