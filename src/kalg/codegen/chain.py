"""A factor-chain decomposition: each output as its integer factors applied one after another.

`factor_chain` builds, for kernels such as the binomial Gaussian
(1 + x)^(n-1) (1 + y)^(n-1) / 4^(n-1), the decomposition a person would write: one sum of shifted
copies per factor, each followed by the halvings that keep values near the input's scale. Such a
chain keeps two or three values alive, whatever the kernel's size, while the e-graph's candidates
for large kernels can hold hundreds of values (the e-graph seeds factorisations as two-way
splits of flat literals, which loses the chain beyond about 7x7). The pipeline offers it as one
more candidate whenever an output factors; kernels with fewer than two non-trivial factors get
none (None). Small kernels gain too: interleaving the halvings with the factors gives gauss5 in
17 instructions where the e-graph's best candidate took 20.
"""

from __future__ import annotations

from kalg.decomp import DagBuilder, Decomposition
from kalg.eqsat.analyses import factors, naf, separation
from kalg.eqsat.terms import canonicalise
from kalg.kernel import Kernel


def factor_chain(outputs: dict[str, Kernel]) -> Decomposition | None:
    """The chain decomposition of `outputs` (register -> dyadic kernel), or None when no
    output factors into two or more non-trivial integer factors (nothing to chain), or an
    output is not dyadic or does not factor up to a shift."""
    plans = {reg: _plan(k) for reg, k in sorted(outputs.items())}
    if not any(p is not None and len(p[0]) >= 2 for p in plans.values()):
        return None
    b = DagBuilder()
    results = {}
    for reg, plan in plans.items():
        if plan is None:
            return None
        results[reg] = _build(b, *plan)
    decomp = b.build(results)
    built = decomp.output_kernels()
    assert all(built[r].same_values(k) for r, k in outputs.items()), "chain != kernel"
    return decomp


SEPARATE_ABOVE = 81
"""Kernels with more taps than this are factored row and column apart when they are separable:
sympy took 10 s to factor the 31x31 Gaussian as one polynomial in x and y, and milliseconds for
its row and column. (Smaller kernels keep the joint factorisation, and their chains.)"""


def _factors(k: Kernel) -> list[Kernel]:
    if len(k.trimmed()) > SEPARATE_ABOVE and (split := separation(k)) is not None:
        return factors(split[1]) + factors(split[0])  # column first, as sympy orders them
    return factors(k)


def chain_widths(k: Kernel) -> list[int]:
    """The number of taps of each integer factor the chain of `k` applies ([] without one)."""
    plan = _plan(k)
    return [] if plan is None else [len(f.trimmed()) for f in plan[0]]


def _plan(k: Kernel) -> tuple[list[Kernel], int, tuple[int, int]] | None:
    """(integer factors, power of two to divide by, shift) with k = shift · Π factors / 2^s."""
    try:
        c = canonicalise(k)
    except ValueError:
        return None  # zero, or not dyadic: SCAMP-5 can only halve
    integer = c.literal if c.sign > 0 else -c.literal  # the sign stays in the factors' content
    x0, y0 = c.offset
    fs = _factors(integer)  # of a polynomial: no negative powers
    product = Kernel.unit()
    for f in fs:
        product = product.compose(f)
    (px, py), (kx, ky) = min(product.trimmed().taps), min(integer.trimmed().taps)
    shift = (kx - px, ky - py)
    if product.shift(*shift).trimmed() != integer.trimmed():
        return None  # sympy's monomial part was more than a shift: do not guess
    shift = (shift[0] + x0, shift[1] + y0)
    return fs, c.halvings, shift


def _build(b: DagBuilder, fs: list[Kernel], halvings: int, shift: tuple[int, int]) -> int:
    acc = b.input
    for f in fs:
        acc = _apply(b, acc, f)
        # Halve by about the factor's gain, so every value stays near the input's scale.
        gain = sum(abs(int(c)) for c in f.taps.values())
        for _ in range(min(halvings, max(gain.bit_length() - 1, 0))):
            acc = b.half(acc)
            halvings -= 1
    for _ in range(halvings):
        acc = b.half(acc)
    return b.shift(acc, *shift)


def _apply(b: DagBuilder, acc: int, f: Kernel) -> int:
    """Σ c · acc shifted by each tap of the integer kernel f, by Horner over the signed digits
    of the coefficients (doublings where a coefficient is not ±1)."""
    planes: dict[int, list[tuple[int, int, int]]] = {}
    for (x, y), c in sorted(f.taps.items()):
        for sign, e in naf(int(c)):
            planes.setdefault(e, []).append((sign, x, y))
    total: int | None = None
    for e in range(max(planes), -1, -1):
        if total is not None:
            total = b.add(total, total)
        for sign, x, y in planes.get(e, []):
            term = b.shift(acc, x, y)
            if total is None:
                total = term if sign > 0 else b.neg(term)
            else:
                total = b.add(total, term) if sign > 0 else b.sub(total, term)
    assert total is not None
    return total
