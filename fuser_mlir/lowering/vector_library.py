"""Vectorised libm for the JIT: glibc's libmvec through LLVM's vector-function ABI.

The CPU lowering calls libm for transcendental functions (``expf``, ``tanh``,
...; :data:`fuser_mlir.lowering.scalar.LIBM_CALLS`). LLVM's loop vectoriser can
widen such a call into a call of a SIMD variant when the scalar declaration
carries the ``vector-function-abi-variant`` attribute (the mechanism behind
clang's ``-fveclib=libmvec`` and OpenMP ``declare simd``); the variant must be
declared in the module and kept alive through ``llvm.compiler.used``. Without
this, every element calls scalar ``expf`` and a fused chain with one ``exp``
runs several times slower than NumPy, whose own kernels are SIMD.

A *vector library* names the variants to use: ``libmvec-avx512`` (16 x f32,
8 x f64, and the narrower ones below), ``libmvec-avx2`` (8 x f32, 4 x f64, and
SSE), ``libmvec-sse`` (4 x f32, 2 x f64). :func:`host_vector_library` picks one
for this machine: it loads ``libmvec.so.1`` into the process (``RTLD_GLOBAL``,
so the JIT resolves the variants) and checks that every variant exists (glibc
2.35 or newer has them all); otherwise it returns ``""`` and the calls stay
scalar. glibc documents at most 4 ulp of error for these functions.

This module builds names and attribute strings only; ``fuser-lower-to-cpu``
emits the declarations (option ``vector-library``).
"""

from __future__ import annotations

import ctypes
import functools

from fuser_mlir.runtime.cpu import cpu_flags

#: Vector library -> (VFABI ISA letter, vector register bits), widest first.
LIBRARIES: dict[str, tuple[tuple[str, int], ...]] = {
    "libmvec-avx512": (("e", 512), ("d", 256), ("b", 128)),
    "libmvec-avx2": (("d", 256), ("b", 128)),
    "libmvec-sse": (("b", 128),),
}
#: CPU flag (``/proc/cpuinfo``) each library needs, in order of preference.
_HOST_FLAGS = (("libmvec-avx512", "avx512f"), ("libmvec-avx2", "avx2"), ("libmvec-sse", "sse4_1"))

#: libm functions (double-precision names) that libmvec vectorises, with arity.
FUNCTIONS: dict[str, int] = {
    **{name: 1 for name in "exp exp2 expm1 log log2 log10 log1p sin cos tan tanh asin acos atan sinh cosh erf erfc".split()},
    "pow": 2,
    "atan2": 2,
}


def split_libm_name(name: str) -> tuple[str, int] | None:
    """``"expf"`` -> ``("exp", 32)``, ``"exp"`` -> ``("exp", 64)``; None if unknown."""
    if name in FUNCTIONS:
        return name, 64
    if name.endswith("f") and name[:-1] in FUNCTIONS:
        return name[:-1], 32
    return None


def variants(scalar_name: str, library: str) -> list[tuple[int, str]]:
    """``(lanes, vector function name)`` of each variant of a libm function,
    e.g. ``(16, "_ZGVeN16v_expf")``, widest first."""
    base, bits = split_libm_name(scalar_name) or (None, 0)
    if base is None:
        return []
    params = "v" * FUNCTIONS[base]
    return [(width // bits, f"_ZGV{isa}N{width // bits}{params}_{scalar_name}") for isa, width in LIBRARIES[library]]


def vfabi_attribute(scalar_name: str, library: str) -> str:
    """The ``vector-function-abi-variant`` value that maps a scalar libm
    function to its variants: ``_ZGV_LLVM_N16v_expf(_ZGVeN16v_expf),...``."""
    params = "v" * FUNCTIONS[split_libm_name(scalar_name)[0]]
    return ",".join(f"_ZGV_LLVM_N{lanes}{params}_{scalar_name}({vector})" for lanes, vector in variants(scalar_name, library))


def all_variant_names(library: str) -> list[str]:
    names = []
    for base in FUNCTIONS:
        for scalar in (base, base + "f"):
            names += [vector for _, vector in variants(scalar, library)]
    return names


@functools.cache
def _load_libmvec() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libmvec.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None


@functools.cache
def host_vector_library() -> str:
    """The best vector library this process can use, or ``""`` (scalar libm)."""
    library = _load_libmvec()
    if library is None:
        return ""
    flags = cpu_flags()
    for name, flag in _HOST_FLAGS:
        if flag in flags and all(hasattr(library, v) for v in all_variant_names(name)):
            return name
    return ""
