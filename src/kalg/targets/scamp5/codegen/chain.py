"""A factor-chain decomposition: each output as its integer factors applied one after another.

`factor_chain` builds, for kernels such as the binomial Gaussian
(1 + x)^(n-1) (1 + y)^(n-1) / 4^(n-1), the decomposition a person would write: one sum of shifted
copies per factor, each preceded by the halvings that keep values near the input's scale. Such a
chain keeps two or three values alive, whatever the kernel's size, while the e-graph's candidates
for large kernels can hold hundreds of values (the e-graph seeds factorisations as two-way
splits of flat literals, which loses the chain beyond about 7x7). The pipeline offers it as one
more candidate whenever an output factors; kernels with fewer than two non-trivial factors get
none (None). Small kernels gain too: a halving before each binomial factor gives gauss5 in 16
instructions (div's scratch -v/2 makes (1 + s)·v/2 one subx), where the e-graph's best
candidate took 20.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kalg.algebra.decomp import DagBuilder, Decomposition
from kalg.algebra.kernel import Kernel
from kalg.eqsat.analyses import factorable_plus_tap, factors, separation
from kalg.eqsat.terms import canonicalise
from kalg.targets.scamp5.optimize import horner


def factor_chain(outputs: dict[str, Kernel], split: bool = False,
                 halve_first: bool = False) -> Decomposition | None:
    """The chain decomposition of `outputs` (register -> dyadic kernel), or None when no
    output factors into two or more non-trivial integer factors (nothing to chain), or an
    output is not dyadic or does not factor up to a shift.

    With `halve_first` (implied by `split`), each factor's halvings come before it (`_steps`:
    the halving rides on the sum) and the outputs of a filter apply the factors they all
    have first, in one order, so that their chains begin alike and share values; an output
    whose whole chain begins another's is that one's starting point (its shift included, so
    no value is moved back). Without it, the halvings follow each factor, the outputs' chains
    are built independently (and shared only as far as hash-consing finds).

    With `split`, a factor of more than two taps that is a factorable kernel S plus one tap
    (`analyses.pivot_splits`: a smooth kernel minus a scaled identity) is applied as S's own
    chain plus the tap (`Split`); None when no output has such a factor. A difference of
    smooth kernels g3 - g5 = g3·(1 - g3) is then two chains and a subtraction."""
    plans = {reg: _plan(k, split) for reg, k in sorted(outputs.items())}
    if split and not any(isinstance(f, Split) for p in plans.values() if p for f in p[0]):
        return None
    if not any(p is not None and (len(p[0]) >= 2 or split) for p in plans.values()):
        return None
    if any(p is None for p in plans.values()):
        return None
    halve_first = halve_first or split
    if halve_first:
        plans = _common_first(plans)
    steps = {reg: _steps(*plan, halve_first=halve_first) for reg, plan in plans.items()}
    b = DagBuilder()
    results: dict[str, int] = {}
    for reg in sorted(steps, key=lambda r: (len(steps[r]), r)):
        start, offset, done = b.input, (0, 0), 0
        for other, value in results.items():  # the longest finished chain this one extends
            n = len(steps[other])
            if halve_first and n > done and steps[reg][:n] == steps[other]:
                start, offset, done = value, plans[other][2], n
        shift = plans[reg][2]
        shift = (shift[0] - offset[0], shift[1] - offset[1])
        rest = steps[reg][done:]
        if rest and isinstance(rest[-1], tuple):  # the output's shift goes into the split's parts
            results[reg] = _run_split(b, _run(b, start, rest[:-1]), *rest[-1], moved=shift)
        else:
            results[reg] = b.shift(_run(b, start, rest), *shift)
    decomp = b.build(results)
    built = decomp.output_kernels()
    assert all(built[r].same_values(k) for r, k in outputs.items()), "chain != kernel"
    return decomp


def _common_first(plans: dict) -> dict:
    """The plans with the factors every output has (as a multiset) first, in the order of the
    first output's factors, then each output's others in their order - when some output's
    factors are all common (it divides every other output, as gauss3 divides gauss5): that
    output is then computed on the way to the others. Otherwise the plans as they are."""
    if len(plans) < 2:
        return plans
    common = list(next(iter(plans.values()))[0])
    for fs, _, _ in plans.values():
        rest = list(fs)
        common = [f for f in common if _take(rest, f)]
    if not any(len(fs) == len(common) for fs, _, _ in plans.values()):
        return plans
    out = {}
    for reg, (fs, halvings, shift) in plans.items():
        rest = list(fs)
        for f in common:
            _take(rest, f)
        out[reg] = ([*common, *rest], halvings, shift)
    return out


def _take(factors: list[Kernel], f: Kernel) -> bool:
    """Remove one factor equal to f from `factors`; whether there was one."""
    for i, g in enumerate(factors):
        if g == f if isinstance(f, Split) or isinstance(g, Split) else (
                g.trimmed() == f.trimmed()):
            del factors[i]
            return True
    return False


SEPARATE_ABOVE = 81
"""Kernels with more taps than this (beyond 9x9) are factored row and column apart when they are
separable: factoring one polynomial in x and y costs far more than factoring its row and its
column, and a separable kernel's factors are those of its row and column. (Smaller kernels keep
the joint factorisation, and their chains; the split stays so that the programs stay the same.)"""


def _factors(k: Kernel) -> list[Kernel]:
    if len(k.trimmed()) > SEPARATE_ABOVE and (split := separation(k)) is not None:
        return factors(split[1]) + factors(split[0])  # column first, as `factors` orders them
    return factors(k)


def chain_widths(k: Kernel) -> list[int]:
    """The number of taps of each integer factor the chain of `k` applies ([] without one)."""
    plan = _plan(k)
    return [] if plan is None else [len(f.trimmed()) for f in plan[0]]


@dataclass(frozen=True)
class Split:
    """A factor applied as S + tap: S = shift · Π factors (a chain of its own), tap = c·x^p."""

    factors: tuple[Kernel, ...]
    shift: tuple[int, int]
    tap: Kernel
    negated: bool = False
    """The factor is -(S + tap), applied as (-tap) - S (a negation saved)."""

    def gain(self) -> int:
        return sum(abs(int(c)) for f in self.factors for c in f.taps.values()) + sum(
            abs(int(c)) for c in self.tap.taps.values())


def _split(f: Kernel) -> Split | None:
    """f as a factorable S plus one tap (the cheapest pivot split), or None."""
    if len(f.trimmed()) <= 2:
        return None
    for s, tap in factorable_plus_tap(f):
        fs = tuple(factors(s))
        product = Kernel.unit()
        for g in fs:
            product = product.compose(g)
        (px, py), (sx, sy) = min(product.trimmed().taps), min(s.trimmed().taps)
        if product.shift(sx - px, sy - py).trimmed() == s.trimmed():
            return Split(fs, (sx - px, sy - py), tap)
    return None


def _plan(k: Kernel, split: bool = False,
          ) -> tuple[list[Kernel | Split], int, tuple[int, int]] | None:
    """(integer factors, power of two to divide by, shift) with k = shift · Π factors / 2^s;
    with `split`, factors that are a factorable kernel plus a tap as `Split`s."""
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
        return None  # the monomial part was more than a shift: do not guess
    shift = (shift[0] + x0, shift[1] + y0)
    if split:
        fs = _negated([_split(f) or f for f in fs])
    return fs, c.halvings, shift


def _negated(fs: list) -> list:
    """The factors with a content of -n carried by the first `Split` (as n and a negated
    split), so that no negation is applied on its own."""
    first = next((i for i, f in enumerate(fs) if isinstance(f, Split)), None)
    sign = next((i for i, f in enumerate(fs) if isinstance(f, Kernel) and len(f.trimmed()) == 1
                 and int(f.trimmed().entries[0][1]) < 0), None)
    if first is None or sign is None:
        return fs
    out = list(fs)
    n = -int(fs[sign].trimmed().entries[0][1])
    if n == 1:
        del out[sign]
    else:
        out[sign] = Kernel.unit(value=n)
    out[out.index(fs[first])] = replace(fs[first], negated=not fs[first].negated)
    return out


def _steps(fs: list[Kernel], halvings: int, shift: tuple[int, int],
           halve_first: bool = True) -> tuple:
    """The chain as steps: a factor (applied to the value so far), None (a halving) or a
    (`Split`, halvings) pair.

    Each factor gets about its gain's worth of halvings, so that every value stays near the
    input's scale: after it, or with `halve_first` before it, so that a halving meets the sum
    that follows it: SCAMP-5's div also gives -v/2, so (1 + s)·v/2 is v/2 moved minus -v/2,
    the halving costs nothing more than the sum (gauss3: 8 instructions, where halving after
    each factor takes 9)."""
    out: list = []
    for f in fs:
        if isinstance(f, Split):  # its halvings go inside, onto S's chain and the tap
            used = min(halvings, max(f.gain().bit_length() - 1, 0))
            out.append((f, used))
        else:
            gain = sum(abs(int(c)) for c in f.taps.values())
            used = min(halvings, max(gain.bit_length() - 1, 0))
            out += [None] * used + [f] if halve_first else [f] + [None] * used
        halvings -= used
    return tuple(out + [None] * halvings)


def _run(b: DagBuilder, acc: int, steps: tuple) -> int:
    for f in steps:
        if f is None:
            acc = b.half(acc)
        elif isinstance(f, tuple):
            acc = _run_split(b, acc, *f)
        else:
            acc = horner(b, f, acc, from_top=True)
    return acc


def _run_split(b: DagBuilder, acc: int, split: Split, halvings: int,
               moved: tuple[int, int] = (0, 0)) -> int:
    """(S + tap)·acc / 2^halvings: S's chain takes the halvings (`_steps`), the tap is
    c / 2^halvings times acc moved, by halving acc (shared with S's chain) where c is odd;
    the result read at +`moved` (its parts moved, not the sum)."""
    ((p, c),) = split.tap.trimmed().entries
    chain = _run(b, acc, _steps(list(split.factors), halvings, split.shift))
    whole = b.shift(chain, split.shift[0] + moved[0], split.shift[1] + moved[1])
    c, h = int(c), halvings
    while h and c % 2 == 0:
        c, h = c // 2, h - 1
    for _ in range(h):
        acc = b.half(acc)
    tap = horner(b, Kernel.of({(p[0] + moved[0], p[1] + moved[1]): abs(c)}), acc,
                 from_top=True)
    if split.negated:  # -(S + c·t) = -c·t - S
        return b.sub(tap, whole) if c < 0 else b.neg(b.add(whole, tap))
    return b.sub(whole, tap) if c < 0 else b.add(whole, tap)
