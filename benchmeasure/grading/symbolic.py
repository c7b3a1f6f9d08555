"""Symbolic equivalence of two LaTeX answers, in a worker process with a time limit.

Parsing uses ``latex2sympy2_extended.latex2sympy`` (an ANTLR grammar: it never calls
``eval``, ``sympify`` or ``parse_expr`` on the input text; only number tokens the lexer
already matched reach ``sympy.Number``). The comparison then runs SymPy's ``simplify`` /
``equals``, which can take unbounded time or memory on a pathological expression such as
``10^{10^{10^{10}}}``. So every comparison runs in one long-lived worker process (started with
``spawn``, address space capped by ``RLIMIT_AS``); when an answer does not come back within
the time limit the worker is killed, the comparison counts as "not equal" and the next one
starts a fresh worker.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MEMORY_MB = 2048
STARTUP_TIMEOUT_S = 120.0


def _equal_in_worker(a: str, b: str) -> bool:
    import sympy
    from latex2sympy2_extended import latex2sympy

    left = latex2sympy(a)
    right = latex2sympy(b)
    if isinstance(left, sympy.MatrixBase) or isinstance(right, sympy.MatrixBase):
        return bool(
            isinstance(left, sympy.MatrixBase)
            and isinstance(right, sympy.MatrixBase)
            and left.shape == right.shape
            and sympy.simplify(left - right).is_zero_matrix
        )
    if isinstance(left, sympy.Set) or isinstance(right, sympy.Set):
        return bool(left == right)
    if isinstance(left, sympy.Eq) and isinstance(right, sympy.Eq):
        d1, d2 = left.lhs - left.rhs, right.lhs - right.rhs
        return sympy.simplify(d1 - d2) == 0 or sympy.simplify(d1 + d2) == 0
    if isinstance(left, sympy.Eq) or isinstance(right, sympy.Eq):
        # "x = 3" against "3": compare the right-hand side of the equation
        left = left.rhs if isinstance(left, sympy.Eq) else left
        right = right.rhs if isinstance(right, sympy.Eq) else right
    if not (isinstance(left, sympy.Expr) and isinstance(right, sympy.Expr)):
        return bool(left == right)
    difference = left - right
    if sympy.simplify(difference) == 0:
        return True
    if not difference.free_symbols:
        value = complex(sympy.N(difference, 30))
        scale = max(1.0, abs(complex(sympy.N(right, 30))))
        return abs(value) <= 1e-9 * scale
    return bool(left.equals(right))


def _parses_in_worker(a: str) -> bool:
    from latex2sympy2_extended import latex2sympy

    latex2sympy(a)
    return True


def _worker(conn, memory_mb: int) -> None:
    try:
        import resource

        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: rely on the timeout
        pass
    import latex2sympy2_extended  # noqa: F401  (imported before "ready" so requests are timed fairly)
    import sympy  # noqa: F401

    conn.send("ready")
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        try:
            op, args = request
            result = _parses_in_worker(*args) if op == "parse" else _equal_in_worker(*args)
        except BaseException:  # parse errors, MemoryError, RecursionError: undecided
            result = None
        conn.send(result)


class SymbolicChecker:
    """A worker process that compares LaTeX answers symbolically, each within ``timeout_s``.

    Thread-safe (one comparison at a time). ``equal`` returns True/False, or None when the
    answers could not be parsed, the worker ran out of memory, or the time limit passed.
    """

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = DEFAULT_MEMORY_MB):
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._lock = threading.Lock()
        self._process = None
        self._conn = None

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._process = context.Process(target=_worker, args=(child, self.memory_mb), daemon=True)
        self._process.start()
        child.close()
        self._conn = parent
        try:
            ready = parent.poll(STARTUP_TIMEOUT_S) and parent.recv() == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            self._kill()
            raise RuntimeError("the symbolic-comparison worker did not start (is latex2sympy2_extended installed?)")

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None

    def equal(self, a: str, b: str, timeout_s: float | None = None) -> bool | None:
        """Whether LaTeX answers ``a`` and ``b`` are symbolically equal (None: undecided)."""
        return self._ask(("equal", (a, b)), timeout_s)

    def parses(self, a: str, timeout_s: float | None = None) -> bool:
        """Whether latex2sympy can parse ``a`` within the time limit."""
        return self._ask(("parse", (a,)), timeout_s) is True

    def _ask(self, request, timeout_s: float | None):
        timeout = self.timeout_s if timeout_s is None else timeout_s
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._kill()
                self._start()
            try:
                self._conn.send(request)
                if self._conn.poll(timeout):
                    return self._conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                pass
            self._kill()
            return None

    def close(self) -> None:
        """Stop the worker (it is restarted on the next comparison)."""
        with self._lock:
            if self._conn is not None and self._process is not None and self._process.is_alive():
                try:
                    self._conn.send(None)
                    self._process.join(2)
                except (OSError, BrokenPipeError):
                    pass
            self._kill()


_shared: SymbolicChecker | None = None
_shared_lock = threading.Lock()


def shared_checker() -> SymbolicChecker:
    """The process-wide checker used by :func:`benchmeasure.grading.grade`."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = SymbolicChecker()
            atexit.register(_shared.close)
        return _shared
