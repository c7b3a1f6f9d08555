"""exp four at a time in compiled kernels, through glibc's vector math library (libmvec), where there is one.

Numba turns ``math.exp`` into one call of the C library's scalar ``exp`` per value: its own vector maths (Intel's
SVML) needs an llvmlite built for it, which the wheels are not, so a loop with an ``exp`` in it does not vectorize.
glibc ships the same functions in vector form (``libmvec``, since 2.22): ``_ZGVdN4v_exp`` takes four doubles in
one AVX2 register and returns their four exps, to within 4 ulp as glibc documents (measured: 4e-16 relative, on
the 2PL's exp(−|η|)). :func:`exp_in_place` calls it on an array, four values a call, the rest (fewer than four)
through the scalar ``exp``; on the 2-core AMD EPYC development machine about 2 ns per value against 9.

It is used only where it can run: Linux on x86-64 with AVX2 (in LLVM's view of this CPU, or in the features the
user gave Numba with ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``, which the kernels are built for) and libmvec found
and loaded into the process before any kernel is compiled or loaded (:data:`AVAILABLE`); a kernel that calls
:func:`exp_in_place` must be compiled only then (the 2pl route's density registers its scalar kernel otherwise).
A cached kernel names the symbol and finds it again when the cache is loaded, because this module loads the
library first.
"""

from __future__ import annotations

import math
import platform
import sys

from numba.extending import intrinsic

from benchmeasure.base.kernel_cache import numba  # kernel modules take Numba from here (the kernel cache)

_SYMBOL = "_ZGVdN4v_exp"


def _load() -> bool:
    """Whether libmvec's AVX2 exp can be called here; loads the library into the process when it can."""
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        import ctypes
        import ctypes.util

        import llvmlite.binding as llvm

        if numba.config.CPU_NAME or numba.config.CPU_FEATURES:   # kernels built for a CPU the user named
            features = numba.config.CPU_FEATURES or ""
        else:
            features = llvm.get_host_cpu_features().flatten()
        if "+avx2" not in features.split(","):   # the call passes four doubles in one AVX2 register
            return False
        name = ctypes.util.find_library("mvec")
        if name is None:
            return False
        getattr(ctypes.CDLL(name), _SYMBOL)          # the symbol is there (AttributeError if not)
        llvm.load_library_permanently(name)           # and visible to the kernels' linker
        return True
    except (OSError, AttributeError, RuntimeError, ImportError):
        return False


#: libmvec's AVX2 exp is callable from kernels in this process
AVAILABLE = _load()


@intrinsic
def _exp4(typingctx, values, start):
    """values[start:start + 4] = exp(values[start:start + 4]), one call of libmvec's AVX2 exp."""
    from llvmlite import ir

    def codegen(context, builder, signature, args):
        array, index = args
        data = context.make_array(signature.args[0])(context, builder, array).data
        quad = ir.VectorType(ir.DoubleType(), 4)
        pointer = builder.bitcast(builder.gep(data, [index]), quad.as_pointer())
        function = builder.module.globals.get(_SYMBOL) or ir.Function(
            builder.module, ir.FunctionType(quad, [quad]), _SYMBOL)
        builder.store(builder.call(function, [builder.load(pointer, align=8)]), pointer, align=8)
        return context.get_dummy_value()

    return numba.types.void(values, start), codegen


@numba.njit(cache=True, inline="always")
def exp_in_place(values):
    """values[:] = exp(values): four at a time through libmvec, the rest one by one (only where
    :data:`AVAILABLE`)."""
    n = values.shape[0]
    j = 0
    while j + 4 <= n:
        _exp4(values, j)
        j += 4
    for k in range(j, n):
        values[k] = math.exp(values[k])
