"""Vectorised libm for the JIT: glibc's libmvec through LLVM's vector-function ABI.

The CPU lowering calls libm for transcendental functions (``expf``, ``tanh``,
...; :data:`fuser_mlir.lowering.scalar.LIBM_CALLS`). LLVM's loop vectoriser can
widen such a call into a call of a SIMD variant when the scalar function
carries the ``vector-function-abi-variant`` attribute (the mechanism behind
clang's ``-fveclib=libmvec`` and OpenMP ``declare simd``); the variant must be
declared in the module and kept alive through ``llvm.compiler.used``. Without
this, every element calls scalar ``expf`` and a fused chain with one ``exp``
runs several times slower than NumPy, whose own kernels are SIMD.

libmvec's variants of one function do not agree with each other nor with
scalar libm in the last place (the SSE4, AVX2 and AVX-512 ones are different
code: ``log10f``'s 8- and 4-lane variants differ on a fifth of random
inputs), and LLVM picks the variant per loop: by vector width, and scalar
libm for a loop it does not vectorise (a transposed read) and for the
iterations after the last whole vector. One value computed in two loop nests
then differed between them, and a comparison of the two copies could come
out wrong. So every call of a function goes through **one** variant,
whatever the loop: the *base* variant of the library (``_ZGVdN8v_expf`` for
``libmvec-avx2``), whose lanes each depend on their own input only. The
lowering calls a wrapper, ``@fuser.expf``, instead of ``expf``: it puts its
argument in every lane of the base variant and takes lane 0 (``noinline``:
inlined before the vectoriser runs, its vector call would keep the loop
scalar). Its mapping offers the vectoriser the base variant and a wrapper of
half its lanes (its lanes twice over); a loop of wider vectors calls the
scalar wrapper per element, so LLVM's cost model picks the base width for
loops that call libm. An element's value is then the same in every loop
nest, block of rows, thread and array length.

What it costs (``python bench/cpu_libm.py``: 64K elements in cache, one
thread, on this project's 2-CPU AVX-512 VM; before -> after this scheme,
microseconds): a loop LLVM does not vectorise now calls the 8-lane variant
once an element, which is cheaper than scalar libm (a transposed ``sin`` of
256x256 float32 430-438 -> 244-251, rows of 7 225-230 -> 153-163; ``sinf``
2.2 ns a call, the 8-lane variant for one element 2.4, ``erff`` 8.8); a
loop whose narrow types (a ``bool`` or ``bfloat16`` result) made LLVM pick
16 lanes called the AVX-512 variant, 1.35x faster per element than the
AVX2 one, and now takes 8 (``sin(x) > 0.5`` 28-29 -> 35-47); loops of 8
lanes are unchanged (``sin`` 35-38 -> 34-35, ``pow`` 146-151 -> 146-153).

A *vector library* names the base variants: ``libmvec-avx2`` (8 x f32,
4 x f64: 256 bits, the width LLVM's vectoriser uses on AVX2 hosts and on
most AVX-512 ones, which it tunes to prefer 256-bit vectors), ``libmvec-sse``
(4 x f32, 2 x f64). :func:`host_vector_library` picks one for this machine:
it loads ``libmvec.so.1`` into the process (``RTLD_GLOBAL``, so the JIT
resolves the variants) and checks that every variant exists (glibc 2.35 or
newer has them all); otherwise it returns ``""`` and the calls stay scalar
libm (one implementation too). glibc documents at most 4 ulp of error for
these functions.

This module builds names and MLIR text only; ``fuser-lower-to-cpu`` renames
the calls and adds the functions (option ``vector-library``).
"""

from __future__ import annotations

import ctypes
import functools

from fuser_mlir.runtime.cpu import cpu_flags

#: Vector library -> (VFABI ISA letter, vector register bits) of its base variants.
LIBRARIES: dict[str, tuple[str, int]] = {
    "libmvec-avx2": ("d", 256),
    "libmvec-sse": ("b", 128),
}
#: CPU flag (``/proc/cpuinfo``) each library needs, in order of preference.
_HOST_FLAGS = (("libmvec-avx2", "avx2"), ("libmvec-sse", "sse4_1"))

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


def wrapper_name(scalar_name: str) -> str:
    """The function the lowering calls instead of ``scalar_name``: ``fuser.expf``
    (a dot keeps it apart from every libm and segment name)."""
    return "fuser." + scalar_name


def wrapper_callee(name: str) -> bool:
    """Whether ``name`` is a libm wrapper's (:func:`wrapper_name`): ``fuser.expf``, not ``fuser.expf.x4``."""
    return name.startswith("fuser.") and split_libm_name(name[len("fuser.") :]) is not None


def base_variant(scalar_name: str, library: str) -> tuple[int, str]:
    """``(lanes, name)`` of the one variant every call goes through, e.g.
    ``(8, "_ZGVdN8v_expf")``."""
    base, bits = split_libm_name(scalar_name)
    isa, width = LIBRARIES[library]
    lanes = width // bits
    return lanes, f"_ZGV{isa}N{lanes}{'v' * FUNCTIONS[base]}_{scalar_name}"


def vector_functions(scalar_name: str, library: str) -> list[tuple[int, str]]:
    """``(lanes, name)`` of each vector function the vectoriser may call for
    ``scalar_name``: the base variant, and a wrapper of half its lanes
    (where that is 2 or more) for loops of narrower vectors."""
    lanes, variant = base_variant(scalar_name, library)
    half = [(lanes // 2, f"{wrapper_name(scalar_name)}.x{lanes // 2}")] if lanes >= 4 else []
    return [(lanes, variant)] + half


def vfabi_attribute(scalar_name: str, library: str) -> str:
    """The ``vector-function-abi-variant`` value of the wrapper:
    ``_ZGV_LLVM_N8v_fuser.expf(_ZGVdN8v_expf),_ZGV_LLVM_N4v_fuser.expf(fuser.expf.x4)``."""
    params = "v" * _shape(scalar_name)[1]
    wrapper = wrapper_name(scalar_name)
    return ",".join(f"_ZGV_LLVM_N{lanes}{params}_{wrapper}({vector})" for lanes, vector in vector_functions(scalar_name, library))


def _shape(scalar_name: str) -> tuple[str, int]:
    """``scalar_name``'s element type and its number of arguments."""
    base, bits = split_libm_name(scalar_name)
    return ("f32" if bits == 32 else "f64"), FUNCTIONS[base]


def _call(variant: str, values: list[str], vector: str) -> str:
    """``%r = llvm.call @variant(values...)``, each value of type ``vector``."""
    return f"  %r = llvm.call @{variant}({', '.join(values)}) : ({', '.join([vector] * len(values))}) -> {vector}"


_NO_MEMORY = (
    "memory_effects = #llvm.memory_effects<other = none, argMem = none, inaccessibleMem = none, "
    "errnoMem = none, targetMem0 = none, targetMem1 = none>, no_unwind, will_return"
)


def _half_wrapper(scalar_name: str, library: str, lanes: int, name: str) -> list[str]:
    """An ``llvm.func`` of ``lanes`` lanes, half the base variant's: its
    lanes twice over through the base variant, the first half back."""
    base_lanes, variant = base_variant(scalar_name, library)
    element, arity = _shape(scalar_name)
    own, base = f"vector<{lanes}x{element}>", f"vector<{base_lanes}x{element}>"
    twice, first = ", ".join(str(i % lanes) for i in range(base_lanes)), ", ".join(str(i) for i in range(lanes))
    params = ", ".join(f"%a{i}: {own}" for i in range(arity))
    lines = [f"llvm.func internal @{name}({params}) -> {own} attributes {{{_NO_MEMORY}}} {{"]
    lines += [f"  %w{i} = llvm.shufflevector %a{i}, %a{i} [{twice}] : {own}" for i in range(arity)]
    lines.append(_call(variant, [f"%w{i}" for i in range(arity)], base))
    lines.append(f"  %y = llvm.shufflevector %r, %r [{first}] : {base}")
    return lines + [f"  llvm.return %y : {own}", "}"]


def _scalar_wrapper(scalar_name: str, library: str) -> list[str]:
    """``func.func private @fuser.expf(f32) -> f32``: the argument in every
    lane of the base variant, lane 0 back. ``noinline``: inlined before the
    vectoriser runs, its vector call would stop the loop from vectorising."""
    lanes, variant = base_variant(scalar_name, library)
    element, arity = _shape(scalar_name)
    vector = f"vector<{lanes}x{element}>"
    params = ", ".join(f"%a{i}: {element}" for i in range(arity))
    mapping = vfabi_attribute(scalar_name, library)
    lines = [
        f"func.func private @{wrapper_name(scalar_name)}({params}) -> {element} attributes {{llvm.linkage = #llvm.linkage<internal>, "
        f'llvm.readnone, no_unwind, will_return, passthrough = ["noinline", ["vector-function-abi-variant", "{mapping}"]]}} {{',
        f"  %u = llvm.mlir.poison : {vector}",
        "  %c0 = llvm.mlir.constant(0 : i32) : i32",
    ]
    for i in range(arity):
        lines.append(f"  %e{i} = llvm.insertelement %a{i}, %u[%c0 : i32] : {vector}")
        lines.append(f"  %v{i} = llvm.shufflevector %e{i}, %u [{', '.join(['0'] * lanes)}] : {vector}")
    lines.append(_call(variant, [f"%v{i}" for i in range(arity)], vector))
    lines.append(f"  %y = llvm.extractelement %r[%c0 : i32] : {vector}")
    lines += [f"  return %y : {element}", "}"]
    return lines


def wrappers_text(scalar_names: list[str], library: str) -> str:
    """MLIR text of everything the calls of ``scalar_names`` need: the base
    variants' declarations, the vector wrappers, ``@llvm.compiler.used``
    (LLVM drops unused functions before it vectorises) over the functions the
    mappings name, and the scalar wrappers."""
    lines, used = [], []
    for name in scalar_names:  # each once: one base variant each
        lanes, variant = base_variant(name, library)
        element, arity = _shape(name)
        vector = f"vector<{lanes}x{element}>"
        lines.append(f"llvm.func @{variant}({', '.join([vector] * arity)}) -> {vector} attributes {{{_NO_MEMORY}}}")
        for width, function in vector_functions(name, library):
            used.append(function)
            if function != variant:
                lines += _half_wrapper(name, library, width, function)
    array = f"!llvm.array<{len(used)} x ptr>"
    lines.append(f'llvm.mlir.global appending @llvm.compiler.used() {{addr_space = 0 : i32, section = "llvm.metadata"}} : {array} {{')
    lines.append(f"  %0 = llvm.mlir.undef : {array}")
    for index, function in enumerate(used):
        lines.append(f'  %p{index} = llvm.mlir.addressof @"{function}" : !llvm.ptr')
        lines.append(f"  %{index + 1} = llvm.insertvalue %p{index}, %{index}[{index}] : {array}")
    lines += [f"  llvm.return %{len(used)} : {array}", "}"]
    for name in scalar_names:
        lines += _scalar_wrapper(name, library)
    return "\n".join(lines)


def all_variant_names(library: str) -> list[str]:
    """The base variant of every function, ``f32`` and ``f64``."""
    return [base_variant(scalar, library)[1] for base in FUNCTIONS for scalar in (base, base + "f")]


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
