"""What every value-and-gradient PyTensor Op of the package shares: :class:`ValueGradOp`.

A kernel that returns a log-likelihood and its gradients in one call (the joint route's fused kernel, the collapsed
route's marginal, the suite's marginals) becomes one graph node with outputs (ℓ, ∂ℓ/∂x₁, …): the first
:attr:`ValueGradOp.n_wrt` inputs are the differentiable ones, the rest constants. Its pullback (reverse-mode gradient)
reuses the node's own gradient outputs, so the log-density and its gradient cost one kernel call per leapfrog step.
The Op runs through ``perform`` (PyMC's NUTS, ``find_MAP``) and, where a module registers its Numba form with
PyTensor, compiled in PyTensor's Numba back end (nutpie); :func:`source_version` is that compiled form's cache salt.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op


class ValueGradOp(Op):
    """(x₁ … x_n, *constants) → (ℓ, ∂ℓ/∂x₁, …, ∂ℓ/∂x_n); a subclass sets :attr:`n_wrt` and :meth:`compute`."""

    __props__ = ()
    n_wrt = 1   # how many leading inputs ℓ is differentiated in

    def compute(self, *inputs):
        """(ℓ, ∂ℓ/∂x₁, …) at the NumPy ``inputs`` (the differentiable ones first)."""
        raise NotImplementedError

    def make_node(self, *inputs):
        wrt = [pt.as_tensor_variable(x).astype("float64") for x in inputs[:self.n_wrt]]
        constants = [pt.as_tensor_variable(c) for c in inputs[self.n_wrt:]]
        grads = [pt.TensorType("float64", shape=(None,) * x.ndim)() for x in wrt]
        return Apply(self, [*wrt, *constants], [pt.dscalar(), *grads])

    def perform(self, node, inputs, outputs):
        value, *grads = self.compute(*inputs)
        outputs[0][0] = np.asarray(value, dtype=np.float64)
        for k, grad in enumerate(grads):
            outputs[1 + k][0] = grad

    def infer_shape(self, node, input_shapes):
        return [(), *input_shapes[:self.n_wrt]]

    def pullback(self, inputs, outputs, cotangents):
        # the gradient outputs of this very node are ∂ℓ/∂x: no second kernel call
        if any(not isinstance(c.type, DisconnectedType) for c in cotangents[1:]):
            raise NotImplementedError(f"only the log-likelihood output of {type(self).__name__} is differentiable")
        gz = cotangents[0]
        return [gz * outputs[1 + k] for k in range(self.n_wrt)] + [DisconnectedType()() for _ in inputs[self.n_wrt:]]

    def connection_pattern(self, node):
        # ℓ depends on the differentiable inputs; the constants never receive a gradient
        width = 1 + self.n_wrt
        return [[True] * width] * self.n_wrt + [[False] * width] * (len(node.inputs) - self.n_wrt)


def source_version(*paths: str) -> int:
    """A number that changes whenever one of ``paths`` (files of the package, ``"irt/routes/joint/kernel.py"``)
    changes: the salt of PyTensor's on-disk cache key of a compiled Op that links those kernels in."""
    import hashlib
    import importlib.resources

    root = importlib.resources.files("benchmeasure")
    digest = hashlib.sha256()
    for path in paths:
        digest.update(root.joinpath(path).read_bytes())
    return int.from_bytes(digest.digest()[:6], "big")
