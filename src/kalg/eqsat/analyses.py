"""Python analyses that seed equalities rules cannot compute (design.md decision 6).

For every canonical literal met (the outputs, then every literal an analysis introduces), each
analysis proposes Kernel terms equal to it:

* `digit_planes`: the taps grouped by power-of-two digit (non-adjacent form), the base case that
  always exists — AUKE's and Cain's atoms, grouped by scale;
* `factorisations`: exact factorisation over the integers of the kernel read as a polynomial in x
  and y (python-flint), every split of the factors into two groups — finds separability (rank 1) and
  repeated binomials (gauss5 = gauss3 ∘ gauss3);
* `separation`: rank-1 separability, k = row ∘ column, found by exact division (no factoring, so
  no split limit can hide it);
* `shared_factors`: across the outputs of one filter, P = R·Q when output Q's kernel divides output
  P's exactly (gauss5 = gauss3·gauss3): P is then computed from Q's value, Q's work done once;
* `pair_splits`: K = (1 ± x^dx y^dy)·A + R for the largest A, in the spirit of AUKE's reverse split
  and Cain's pair generation; R is often empty (then it is a factorisation) or small;
* `axis_splits`: K = row + column + rest through a pivot tap whose coefficient is shared out so
  that the row and column parts vanish at x = ±1 (y = ±1) and factor: a Laplacian-like kernel
  becomes (1 - x^-1)(1 - x) + (1 - y^-1)(1 - y) + c, which no factorisation of K itself finds.

Every seed is exact: `tests/test_analyses.py` evaluates each one back to its literal.
Pure Python (python-flint for factoring); no egglog here.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction

import flint

from kalg.algebra.approx import pow2_digits
from kalg.algebra.kernel import Kernel
from kalg.eqsat import terms as t

_ZZ = flint.fmpz_mpoly_ctx.get(("x", "y"), "lex")
_QQ = flint.fmpq_mpoly_ctx.get(("x", "y"), "lex")


@dataclass
class Seeds:
    """Root terms for the outputs, and `(Lit key) = term` unions with the analysis behind each."""

    roots: dict[str, str]
    outputs: dict[str, Kernel] = field(default_factory=dict)
    unions: list[tuple[str, str, str]] = field(default_factory=list)  # (lit term, term, analysis)
    literals: dict[str, Kernel] = field(default_factory=dict)
    introduced: dict[str, str] = field(default_factory=dict)
    """Literal key → the one analysis whose seeded terms name it, for the literals that are
    not outputs and that no other analysis names: a decomposition through such a literal is
    that analysis's work."""
    truncated: bool = False


SCALED_PLANES_MAX_TAPS = 5
"""Literals with more taps than this get no scaled digit planes of their own (e-graph size)."""


def seed(outputs: dict[str, Kernel], max_literals: int = 30,
         written: dict[str, tuple] | None = None) -> Seeds:
    """Analyse the output kernels and every literal the analyses introduce, up to `max_literals`.

    `written` holds, for outputs written as algebra, the tree of what was written
    (`kalg.frontend.structure`): its term is unioned with the output ("as-written") before the
    analyses run, so its literals are analysed too."""
    table = t.LiteralTable()
    seeds = Seeds(roots={name: table.term(k) for name, k in sorted(outputs.items())},
                  outputs=dict(sorted(outputs.items())))
    for name, tree in sorted((written or {}).items()):
        if (term := written_term(tree, table)) is not None:
            seeds.unions.append((seeds.roots[name], term, "as-written"))
    max_halvings = max(t.canonicalise(k).halvings for k in outputs.values())
    for name, term in shared_factors(seeds.outputs, table):
        seeds.unions.append((seeds.roots[name], term, "shared-factor"))
    done: set[str] = set()
    output_keys = set(_LITERAL.findall(" ".join(seeds.roots.values())))
    structured = set(output_keys)  # the literals the structured-sum analyses run on
    while pending := [key for key in table.literals if key not in done]:
        if len(done) >= max_literals:
            seeds.truncated = True
            break
        key = pending[0]
        done.add(key)
        lit = f'(Lit "{key}")'
        for analysis, term in analyse(table.literals[key], table, key in structured):
            seeds.unions.append((lit, term, analysis))
            if key in output_keys and analysis == "factorisation":
                structured.update(_LITERAL.findall(term))  # an output's factors: one level
        seeds.unions += _scaled_unions(key, table, max_halvings, key in structured)
    seeds.literals = dict(table.literals)
    seeds.introduced = _sole_namers(seeds)
    return seeds


_LITERAL = re.compile(r'\(Lit "([^"]*)"\)')
"""A literal in term text; group 1 is its key."""


def _scaled_unions(key: str, table: t.LiteralTable, max_halvings: int, structured: bool,
                   ) -> list[tuple[str, str, str]]:
    """Unions for the literal at 2^-1 .. 2^-max_halvings: the halvings of an output may land
    on any of its factors, so a small literal gets its digit planes at every scale (halving per
    digit, AUKE's atoms; large literals get them through their factors, half-compose moves
    halvings there), and a `structured` one its structured sums with halved parts."""
    lit, k = f'(Lit "{key}")', table.literals[key]
    out = []
    for h in range(1, max_halvings + 1):
        if structured:
            out += [(t.khalf(lit, h), term, analysis)
                    for analysis, term in scaled_structured_sums(k, table, h)]
        if len(k) <= SCALED_PLANES_MAX_TAPS:
            out += [(t.khalf(lit, h), term, "scaled-digit-planes") for term in digit_planes(k, h)]
    return out


def _sole_namers(seeds: Seeds) -> dict[str, str]:
    """Literal key → analysis, for the literals exactly one analysis names (outputs excluded)."""
    namers: dict[str, set[str]] = {}
    for _, term, analysis in seeds.unions:
        for key in _LITERAL.findall(term):
            namers.setdefault(key, set()).add(analysis)
    outputs = {key for term in seeds.roots.values()
               for key in _LITERAL.findall(term)}
    return {key: next(iter(names)) for key, names in namers.items()
            if len(names) == 1 and key not in outputs}


def analyse(k: Kernel, table: t.LiteralTable, output: bool = True,
            ) -> Iterator[tuple[str, str]]:
    """(analysis name, term) pairs, each term equal to the canonical literal `k`.

    The structured-sum analyses (`peel_splits`, `pivot_splits`, `coefficient_classes`) run on
    the outputs' literals and their factors only (`output`): run on every literal they
    introduce, they multiply the literals past `max_literals` and crowd out the factorisations
    of the parts."""
    for term in digit_planes(k):
        yield "digit-planes", term
    for term in factorisations(k, table):
        yield "factorisation", term
    if (parts := separation(k)) is not None:
        yield "separable", t.compose(table.term(parts[0]), table.term(parts[1]))
    for term in pair_splits(k, table):
        yield "pair-split", term
    if _factor_count(k) < 2:  # a reducible kernel is split through its factors' literals
        for term in axis_splits(k, table):
            yield "axis-split", term
    if output:
        yield from _structured_sums(k, table)
    for term in constant_chain(k, table):
        yield "constant-chain", term


# ------------------------------------------------------------------ what the user wrote
def written_term(tree: tuple, table: t.LiteralTable) -> str | None:
    """The Kernel term of a structure tree (`kalg.frontend.structure`), or None when a part of it
    is the zero kernel or a scale is not dyadic (no literal term exists for it)."""
    term, _ = _written(tree, table)
    return term


def _written(tree: tuple, table: t.LiteralTable) -> tuple[str | None, Kernel]:
    op = tree[0]
    if op == "leaf":
        k = tree[1]
        return (table.term(k) if k.trimmed().entries and k.is_dyadic() else None), k
    parts = [_written(sub, table) for sub in tree[1:] if isinstance(sub, tuple)]
    terms = [p[0] for p in parts]
    values = [p[1] for p in parts]
    match op:
        case "add":
            k = values[0] + values[1]
            term = t.kadd(*terms) if None not in terms else None
        case "sub":
            k = values[0] - values[1]
            term = f"(KSub {terms[0]} {terms[1]})" if None not in terms else None
        case "neg":
            k = -values[0]
            term = t.kneg(terms[0]) if terms[0] is not None else None
        case "mul":
            k = values[0].compose(values[1])
            term = t.compose(*terms) if None not in terms else None
        case _:  # scale
            c = Fraction(tree[2])
            k = values[0].scale(c)
            unit = Kernel.unit(value=c)
            term = (t.compose(table.term(unit), terms[0])
                    if terms[0] is not None and unit.is_dyadic() else None)
    if not k.trimmed().entries:
        return None, k
    return term, k


# ------------------------------------------------------------------ digit planes
def naf(n: int) -> list[tuple[int, int]]:
    """Non-adjacent form of a non-zero integer: (sign, exponent) digits, fewest non-zero digits.

    >>> naf(7)
    [(1, 3), (-1, 0)]
    """
    return pow2_digits(n)


def tap_digits(k: Kernel) -> list[tuple[int, int, int, int]]:
    """(sign, exponent, x, y) for every signed power-of-two digit of every tap: the atoms of k.

    k = Σ sign · 2^exponent · x^x y^y, with exponents negative for halvings.
    """
    return [(sign, e, x, y) for (x, y), c in k.trimmed().entries for sign, e in pow2_digits(c)]


_TWO = t.kadd(t.sh(0, 0), t.sh(0, 0))


def _double(term: str, times: int) -> str:
    """term · 2^times as (1+1)·(1+1)·...·term: text linear in `times` (writing term + term
    instead doubles the text at every step - megabytes for a 9x9 Gaussian's coefficients)."""
    for _ in range(times):
        term = t.compose(_TWO, term)
    return term


def _scaled(term: str, e: int) -> str:
    """term · 2^e: doublings for e > 0, halvings for e < 0."""
    return _double(term, e) if e >= 0 else t.khalf(term, -e)


def digit_planes(k: Kernel, halvings: int = 0) -> Iterator[str]:
    """k / 2^halvings = Σ_j 2^(j - halvings) · S_j, S_j a sum of ±unit kernels (the base case).

    Also the Horner form, which shares one scaling step between consecutive digit planes:
    ((S_0/2 + S_1)/2 + S_2)... for halvings, or S_0 + 2(S_1 + 2(...)) for doublings.
    """
    planes: dict[int, list[str]] = {}
    for (x, y), c in k.entries:
        for sign, e in naf(int(c)):
            unit = t.sh(x, y)
            planes.setdefault(e - halvings, []).append(unit if sign > 0 else t.kneg(unit))
    if halvings == 0 and len(k) == 1 and list(planes) == [0]:
        yield t.sh(0, 0)  # the canonical unit literal is the identity
        return
    yield t.balanced_sum([_scaled(t.balanced_sum(s), e) for e, s in sorted(planes.items())])
    if len(planes) > 1:
        yield _horner(planes)


def _horner(planes: dict[int, list[str]]) -> str:
    """Σ_e 2^e S_e evaluated from the lowest plane up, one scaling step between planes."""
    exps = sorted(planes)
    acc = t.balanced_sum(planes[exps[0]])
    for lo, hi in itertools.pairwise(exps):
        acc = t.balanced_sum([_scaled(acc, lo - hi), t.balanced_sum(planes[hi])])
    return _scaled(acc, exps[-1])


# ------------------------------------------------------------------ factorisation
def _polynomial(k: Kernel, ring=_ZZ):
    """k as a polynomial in x and y over `ring` (_ZZ: integer taps, _QQ); k has no negative
    offset (callers pass canonical literals: a polynomial, not a Laurent polynomial)."""
    taps = {(x, y): int(c) for (x, y), c in k.entries}
    if any(x < 0 or y < 0 for x, y in taps):
        raise ValueError(f"a kernel with negative offsets is not a polynomial: {k}")
    return ring.from_dict(taps)


def _kernel(p) -> Kernel:
    return Kernel.of({(int(a), int(b)): Fraction(int(c.p), int(c.q)) if isinstance(c, flint.fmpq)
                      else Fraction(int(c)) for (a, b), c in p.terms()})


@functools.lru_cache(maxsize=1024)
def factors(k: Kernel) -> list[Kernel]:
    """The non-trivial integer factors of k (with multiplicity), monomials dropped, content kept.

    Each factor is primitive with a positive leading coefficient (lex, x before y), the sign in
    the content; the factors come in a fixed order, fewest powers of x first, then lowest
    multiplicity, then by their coefficients (the order sympy's factor_list gives, which the
    programs were made with: a different order gives other, equally valid, programs).
    Memoised (factoring dominates the analyses): callers must not mutate the list."""
    content, parts = _integer_factors(_polynomial(k))
    normal = []
    for f, m in parts:
        if _dense(f)[0][0] < 0:  # python-flint normalises so already: the rule, made explicit
            f, content = -f, content * (-1) ** int(m)
        normal.append((_dense(f), int(m), f))
    normal.sort(key=lambda e: (len(e[0]), e[1], e[0]))
    out = [_kernel(f) for _, m, f in normal for _ in range(m) if len(f) > 1]
    if content != 1:
        out.append(Kernel.unit(value=content))
    return out


def _integer_factors(p) -> tuple[int, list]:
    """(content, [(primitive factor, multiplicity)]) of an integer polynomial. python-flint
    0.9's integer factoring sorts its factors with a key that overflows on coefficients of 2^31
    or more (OverflowError for [1 2^31+1 1]'s pivot x^2 + 2147483649x - 2147483650): then the
    polynomial is factored over the rationals, each factor made primitive over the integers
    (Gauss's lemma: the product of primitive polynomials is primitive), and the content is what
    is left."""
    try:
        content, parts = p.factor()
        return int(content), list(parts)
    except OverflowError:
        pass
    _, rational = _QQ.from_dict({e: int(c) for e, c in zip(p.monoms(), p.coeffs(), strict=True)
                                 }).factor()
    parts, product = [], _ZZ.from_dict({(0, 0): 1})
    for f, m in rational:
        den = math.lcm(*(int(c.q) for c in f.coeffs()))
        nums = [int(c * den) for c in f.coeffs()]
        g = math.gcd(*nums)
        primitive = _ZZ.from_dict({e: n // g for e, n in zip(f.monoms(), nums, strict=True)})
        parts.append((primitive, int(m)))
        product *= primitive ** int(m)
    lead, lead_product = int(p.coeffs()[0]), int(product.coeffs()[0])
    return lead // lead_product, parts


def _dense(p) -> list[list[int]]:
    """p as nested coefficient lists, highest power of x first, each a list of coefficients of
    y from its highest power down (sympy's dense form: the sort key of `factors`)."""
    terms = {(int(a), int(b)): int(c) for (a, b), c in p.terms()}
    rows: dict[int, dict[int, int]] = {}
    for (a, b), c in terms.items():
        rows.setdefault(a, {})[b] = c
    return [[rows[a].get(b, 0) for b in range(max(rows[a]), -1, -1)] if a in rows else []
            for a in range(max(rows), -1, -1)]


def factorisations(k: Kernel, table: t.LiteralTable, max_splits: int = 40) -> Iterator[str]:
    """K = A·B for every split of its factors into two non-empty sub-multisets.

    Equal factors are grouped, so (1+x)^4 (1+y)^4 gives 24 splits, not 2^8.
    """
    fs = factors(k)
    if len(fs) < 2:
        return
    distinct: dict[str, tuple[Kernel, int]] = {}
    for f in fs:
        key = t.key_of(f)
        distinct[key] = (f, distinct.get(key, (f, 0))[1] + 1)
    groups = list(distinct.values())
    seen: set[tuple[str, str]] = set()
    for counts in itertools.product(*(range(m + 1) for _, m in groups)):
        if len(seen) >= max_splits:
            return
        a = _product(f for (f, _), n in zip(groups, counts, strict=True) for _ in range(n))
        b = _product(f for (f, m), n in zip(groups, counts, strict=True) for _ in range(m - n))
        if not 0 < sum(counts) < len(fs):
            continue
        pair = tuple(sorted((t.key_of(a), t.key_of(b))))
        if pair not in seen:
            seen.add(pair)
            yield t.compose(table.term(a), table.term(b))


def separation(k: Kernel) -> tuple[Kernel, Kernel] | None:
    """Rank-1 separability: (row, column) with k = row ∘ column exactly, or None.

    The row is k's row through its first tap, made primitive (integer, gcd 1), at y = 0; the
    column follows by exact division, at x = 0 - integral too for an integer k (Gauss's lemma).
    Found directly, not through `factorisations`, so no split limit can hide it. None when k is
    not rank 1 or one side is a single tap (nothing to separate).
    """
    taps = k.trimmed().taps
    x0, y0 = min(taps, key=lambda xy: (xy[1], xy[0]))
    row_taps = {x: c for (x, y), c in taps.items() if y == y0}
    integral = all(Fraction(c).denominator == 1 for c in row_taps.values())
    g = math.gcd(*(int(c) for c in row_taps.values())) if integral else 1
    row = {x: Fraction(c) / g for x, c in row_taps.items()}
    col = {y: Fraction(c) / row[x0] for (x, y), c in taps.items() if x == x0}
    if len(row) < 2 or len(col) < 2:
        return None
    product = {(x, y): rx * cy for x, rx in row.items() for y, cy in col.items()}
    if len(product) != len(taps) or any(taps.get(xy) != c for xy, c in product.items()):
        return None
    return (Kernel.of({(x, 0): c for x, c in row.items()}),
            Kernel.of({(0, y): c for y, c in col.items()}))


def shared_factors(outputs: dict[str, Kernel], table: t.LiteralTable,
                   ) -> Iterator[tuple[str, str]]:
    """(P, R·Q term) for every pair of outputs where Q's kernel divides P's exactly.

    The term composes R with Q's own root term, so that both outputs' e-classes meet in Q's.
    """
    roots = {name: table.term(k) for name, k in outputs.items()}
    for (p, kp), (q, kq) in itertools.permutations(outputs.items(), 2):
        r = quotient(kp, kq)
        if r is not None:
            yield p, t.compose(table.term(r), roots[q])


def quotient(p: Kernel, q: Kernel) -> Kernel | None:
    """The kernel r with r·q == p exactly, or None when q does not divide p."""
    cp, cq = t.canonicalise(p), t.canonicalise(q)
    divisor = _polynomial(cq.literal, _QQ)
    if len(divisor) < 2:
        return None
    ratio, rest = divmod(_polynomial(cp.literal, _QQ), divisor)
    if rest != 0:  # a remainder with respect to one divisor is zero exactly when it divides
        return None
    r = (_kernel(ratio)
         .scale(Fraction(cp.sign * cq.sign * 2**cq.halvings, 2**cp.halvings))
         .shift(cp.offset[0] - cq.offset[0], cp.offset[1] - cq.offset[1]))
    if not r.is_dyadic() or not r.compose(q).same_values(p):
        return None
    return r


def _product(ks: Iterator[Kernel]) -> Kernel:
    out = Kernel.unit()
    for f in ks:
        out = out.compose(f)
    return out


# ------------------------------------------------------------------ pair splits
_NEAR = [(dx, dy) for dx in range(-2, 3) for dy in range(-2, 3)
         if (dx, dy) > (0, 0) and abs(dx) + abs(dy) <= 2]


def pair_splits(k: Kernel, table: t.LiteralTable, max_splits: int = 3) -> Iterator[str]:
    """K = (1 + s·x^dx y^dy)·A + R, for near offsets, signs s = ±1, and the largest such A.

    A is found greedily along each chain p, p+d, p+2d, ...: the shared magnitude of two taps
    that differ by d (equal signs for s = +1, opposite for s = -1) goes to A. Only splits where A
    covers at least half of |K|'s atoms are kept, best first.
    """
    found = []
    for d in _NEAR:
        for s in (1, -1):
            a, r = _split(k, d, s)
            if a is None:
                continue
            covered = 2 * sum(abs(int(c)) for _, c in a.entries)
            found.append((-covered, d, s, a, r))
    total = sum(abs(int(c)) for _, c in k.entries)
    found = [f for f in sorted(found, key=lambda f: (f[0], f[1], -f[2])) if -f[0] * 2 >= total]
    for _, d, s, a, r in found[:max_splits]:
        pair = t.kadd(t.sh(0, 0), t.sh(*d) if s > 0 else t.kneg(t.sh(*d)))
        term = t.compose(pair, table.term(a))
        yield term if not r.trimmed().entries else t.kadd(term, table.term(r))


def _split(k: Kernel, d: tuple[int, int], s: int) -> tuple[Kernel | None, Kernel]:
    """Greedy A with K = A + s·shift_d(A) + R (A's atoms taken pairwise along d)."""
    rest = {o: int(c) for o, c in k.entries}
    a: dict[tuple[int, int], int] = {}
    for o in sorted(rest):
        p = (o[0] + d[0], o[1] + d[1])
        c, c2 = rest.get(o, 0), rest.get(p, 0)
        if c * c2 * s <= 0:  # a pair needs c2 to carry the sign of s·c
            continue
        m = min(abs(c), abs(c2))
        v = m if c > 0 else -m
        a[o] = v
        rest[o] = c - v
        rest[p] = c2 - s * v
    if not a:
        return None, k
    return Kernel.of(a), Kernel.of({o: c for o, c in rest.items() if c})


# ------------------------------------------------------------------ axis splits
def axis_splits(k: Kernel, table: t.LiteralTable, max_splits: int = 2) -> Iterator[str]:
    """K = R + C + M: R the taps in a pivot tap p's row, C those in its column, each with a share
    of p's coefficient, and M the rest (p keeps what is left).

    A share is chosen so that its part vanishes at x = 1 or x = -1 (resp. y): the part is then
    divisible by (1 - x) or (1 + x) and may factor (the factorisation analysis of its literal
    finds the factors). A split is kept only when its parts (the row and column factored) need
    fewer additions (`_adds`) than K factored; the cheapest `max_splits` are seeded.
    """
    taps = {o: int(c) for o, c in k.trimmed().entries}
    whole = _factored_adds(k)
    found: dict[tuple[str, ...], tuple[int, list[Kernel]]] = {}
    for p in sorted(taps):
        lines = [{o: c for o, c in taps.items() if o[axis] == p[axis] and o != p}
                 for axis in (1, 0)]  # p's row (same y), then its column (same x)
        if not any(lines):
            continue
        for shares in itertools.product(*(_pivot_shares(line, p) for line in lines)):
            parts = [Kernel.of(line | {p: a}).trimmed()
                     for line, a in zip(lines, shares, strict=True)]
            rest = {o: c for o, c in taps.items() if not any(o in line for line in lines)}
            rest[p] = taps[p] - sum(shares)
            parts = [part for part in parts if part.entries]
            kept = Kernel.of({o: c for o, c in rest.items() if c})
            if len(parts) + bool(kept.entries) < 2:
                continue
            # Only the one-dimensional parts are factored; the rest is costed as it is. A product
            # of m binomials has at most 2^m taps, so a part of n taps needs log2(n) additions:
            # splits that cannot pay even so are dropped before anything is factored.
            adds = len(parts) - 1
            if kept.entries:
                adds += _adds(t.canonicalise(kept).literal) + 1
            if adds + sum((len(part) - 1).bit_length() for part in parts) >= whole:
                continue
            adds += sum(_factored_adds(part) for part in parts)
            if kept.entries:
                parts.append(kept)
            key = tuple(sorted(t.key_of(part) for part in parts))
            if adds < whole:
                found.setdefault(key, (adds, parts))
    for _, parts in sorted(found.values(), key=lambda f: f[0])[:max_splits]:
        yield t.balanced_sum([table.term(part) for part in parts])


def _pivot_shares(line: dict[tuple[int, int], int], p: tuple[int, int]) -> list[int]:
    """Shares a of the pivot p's coefficient with which line + a·p vanishes at 1, then at -1."""
    if not line:
        return [0]
    at_one = -sum(line.values())
    at_minus_one = -sum(-c if (sum(o) - sum(p)) % 2 else c for o, c in line.items())
    return list(dict.fromkeys((at_one, at_minus_one)))


def _factor_count(k: Kernel) -> int:
    """How many factors of at least two taps k has."""
    return sum(1 for f in factors(k) if len(f) > 1)


def _adds(k: Kernel) -> int:
    """Additions to apply an integer kernel by its digit planes: one per signed power-of-two
    digit beyond the first, and one per doubling of the largest digit."""
    digits = [e for _, c in k.entries for _, e in naf(int(c))]
    return len(digits) - 1 + max(0, *digits)


def _factored_adds(k: Kernel) -> int:
    """`_adds` of k's canonical literal, or of its factors applied in turn if that is fewer."""
    literal = t.canonicalise(k).literal
    return min(_adds(literal), sum(_adds(f) for f in factors(literal)))


# ------------------------------------------------------------------ structured sums
def _structured_sums(k: Kernel, table: t.LiteralTable) -> Iterator[tuple[str, str]]:
    if _factor_count(k) < 2:  # a reducible kernel is split through its factors' literals
        for term in peel_splits(k, table):
            yield "separable-plus-rest", term
        for term in pivot_splits(k, table):
            yield "factorable-plus-tap", term
    for term in coefficient_classes(k, table):
        yield "coefficient-classes", term


def scaled_structured_sums(k: Kernel, table: t.LiteralTable, halvings: int,
                           ) -> Iterator[tuple[str, str]]:
    """The sums of `_structured_sums` equal to k / 2^halvings (halvings on the parts)."""
    if _factor_count(k) < 2:
        for term in peel_splits(k, table, halvings=halvings):
            yield "separable-plus-rest", term
        for term in pivot_splits(k, table, halvings=halvings):
            yield "factorable-plus-tap", term


def peel_splits(k: Kernel, table: t.LiteralTable, max_splits: int = 2,
                halvings: int = 0) -> Iterator[str]:
    """K = row·column + R: the separable kernel that agrees with K on a pivot tap's row and
    column (one step of rank reduction, K(x, py)·K(px, y) / K(p)), and the rest R, which is zero
    on that row and column.

    R is often small or separable itself: a scaled identity (unsharp masks: 2 - g5), a box's
    centre (a box minus its centre), or a second separable kernel (a difference of Gaussians, a
    sum of two separable kernels - rank 2 over the rationals; R's own literal gets `separation`).
    Kept only when the parts are estimated cheaper (`_adds` of each, factored) than K; the
    cheapest `max_splits` are seeded. Parts must be dyadic (SCAMP-5 can only halve). With
    `halvings` h the term equals K / 2^h, R scaled exactly (so 16·identity / 16 is the identity,
    not four doublings and four halvings).
    """
    for row, col, rest in _peels(k)[:max_splits]:
        yield _halved_sum(t.compose(table.term(row), table.term(col)), rest, halvings, table)


@functools.lru_cache(maxsize=256)
def _peels(k: Kernel) -> list[tuple[Kernel, Kernel, Kernel]]:
    """`peel_splits`' (row, column, rest) parts, cheapest first (memoised: asked once per
    halving of the literal)."""
    taps = {o: Fraction(c) for o, c in k.trimmed().entries}
    whole = _factored_adds(k)
    found: dict[tuple[str, ...], tuple[int, Kernel, Kernel, Kernel]] = {}
    for p in sorted(taps):
        parts = _peel(taps, p)
        if parts is None:
            continue
        row, col, rest = parts
        adds = _factored_adds(row) + _factored_adds(col) + 2 + _factored_adds(rest)
        key = tuple(t.key_of(t.canonicalise(f).literal) for f in (row, col, rest))
        if adds < whole:
            found.setdefault(key, (adds, row, col, rest))
    return [parts for _, *parts in sorted(found.values(), key=lambda f: f[0])]


def _peel(taps: dict[tuple[int, int], Fraction], p: tuple[int, int],
          ) -> tuple[Kernel, Kernel, Kernel] | None:
    """(row, column, rest) of the rank-1 peel at pivot p, or None (K rank 1 there, a side of
    one tap, or a part not dyadic)."""
    px, py = p
    pivot = taps[p]
    row = {x: c for (x, y), c in taps.items() if y == py}
    col = {y: c for (x, y), c in taps.items() if x == px}
    if len(row) < 2 or len(col) < 2:
        return None
    if all(_dyadic(c / pivot) for c in col.values()):
        col = {y: c / pivot for y, c in col.items()}
    elif all(_dyadic(c / pivot) for c in row.values()):
        row = {x: c / pivot for x, c in row.items()}
    else:
        return None
    product = {(x, y): a * b for x, a in row.items() for y, b in col.items()}
    rest = {o: taps.get(o, 0) - product.get(o, 0) for o in taps.keys() | product.keys()}
    rest = {o: c for o, c in rest.items() if c}
    if not rest or not all(_dyadic(c) for c in rest.values()):
        return None
    return (Kernel.of({(x - px, 0): c for x, c in row.items()}),
            Kernel.of({(px, y): c for y, c in col.items()}), Kernel.of(rest))


def _dyadic(c: Fraction) -> bool:
    d = Fraction(c).denominator
    return d & (d - 1) == 0


def pivot_splits(k: Kernel, table: t.LiteralTable, max_splits: int = 2,
                 halvings: int = 0) -> Iterator[str]:
    """K = S + c·x^px y^py: S is K with one tap p changed so that S is divisible by a binomial
    (1 ± x) or (1 ± y), and S factors; c is the change. Finds a smooth factorable
    kernel minus a scaled identity where no single factorisation of K exists.

    The value v of S at p follows from one equation (S vanishes at x = ∓1, resp. y); every other
    row (column) must vanish already, which rules most pivots out before anything is factored.
    Kept when S factored and the tap are estimated cheaper than K.
    """
    for s, tap in _pivots(k)[:max_splits]:
        yield _halved_sum(table.term(s), tap, halvings, table)


def factorable_plus_tap(k: Kernel) -> list[tuple[Kernel, Kernel]]:
    """`pivot_splits`' parts of the integer kernel k: (S, tap) with k = S + tap, S divisible by
    a binomial and factoring into at least two factors, cheapest first (estimated by `_adds`);
    [] when there is none. The factor chain applies such a factor as S's chain plus the tap."""
    x0, _, y0, _ = k.trimmed().bounds()
    return [(s.shift(x0, y0), tap.shift(x0, y0)) for s, tap in _pivots(k.trimmed().shift(-x0, -y0))]


@functools.lru_cache(maxsize=256)
def _pivots(k: Kernel) -> list[tuple[Kernel, Kernel]]:
    """`pivot_splits`' (S, tap) parts, cheapest first (memoised like `_peels`)."""
    taps = {o: int(c) for o, c in k.trimmed().entries}
    whole = _factored_adds(k)
    found: dict[str, tuple[int, Kernel, Kernel]] = {}
    for p in sorted(taps):
        for v in _pivot_values(taps, p):
            if v == taps[p]:
                continue
            s = Kernel.of({**{o: c for o, c in taps.items() if o != p}, **({p: v} if v else {})})
            if len(s.trimmed()) < 2 or _factor_count(s) < 2:
                continue
            tap = Kernel.of({p: taps[p] - v})
            adds = _factored_adds(s) + 1 + _adds(t.canonicalise(tap).literal)
            if adds < whole:
                found.setdefault(t.key_of(s), (adds, s, tap))
    return [(s, tap) for _, s, tap in sorted(found.values(), key=lambda f: f[0])]


def _halved_sum(term: str, rest: Kernel, halvings: int, table: t.LiteralTable) -> str:
    """(term + rest) / 2^halvings, the halvings on `term` and `rest` scaled exactly."""
    return t.kadd(t.khalf(term, halvings), table.term(rest.scale(Fraction(1, 2**halvings))))


def _pivot_values(taps: dict[tuple[int, int], int], p: tuple[int, int]) -> list[int]:
    """Values v for tap p with which K (p set to v) vanishes at x = 1, x = -1, y = 1 or y = -1."""
    values = []
    for axis in (0, 1):
        lines: dict[int, list[tuple[int, int]]] = {}
        for o, c in taps.items():
            lines.setdefault(o[1 - axis], []).append((o[axis], c))
        for sign in (1, -1):
            if any(_at(line, sign) for w, line in lines.items() if w != p[1 - axis]):
                continue
            rest = _at(lines[p[1 - axis]], sign, (p[axis], taps[p]))
            values.append(-rest * sign ** (p[axis] % 2))
    return list(dict.fromkeys(values))


def _at(line: list[tuple[int, int]], sign: int, skip: tuple[int, int] | None = None) -> int:
    """A line of taps (position, coefficient) as a polynomial evaluated at `sign`."""
    return sum(c * sign ** (a % 2) for a, c in line if (a, c) != skip)


# ------------------------------------------------------------------ coefficient classes
def coefficient_classes(k: Kernel, table: t.LiteralTable) -> Iterator[str]:
    """K = Σ_o Q_o·o over the odd parts o of K's coefficients: Q_o holds the taps whose odd part
    is o (signed powers of two), applied to o·input, the multiple made once and shared by every
    tap of its class (the shift-and-add sharing of multiple-constant multiplication; the
    multiples themselves share a chain through `constant_chain`).

    Seeded when some odd part above 1 is shared by two or more taps (else nothing is shared).
    """
    classes: dict[int, dict[tuple[int, int], int]] = {}
    for o, c in k.trimmed().entries:
        n = int(c)
        odd = abs(n) >> ((abs(n) & -abs(n)).bit_length() - 1)
        classes.setdefault(odd, {})[o] = n // odd
    if not any(odd > 1 and len(q) > 1 for odd, q in classes.items()) or len(classes) < 2:
        return
    parts = []
    for odd, q in sorted(classes.items()):
        pattern = table.term(Kernel.of(q))
        multiple = table.term(Kernel.unit(value=odd))
        parts.append(pattern if odd == 1 else t.compose(pattern, multiple))
    yield t.balanced_sum(parts)


def constant_chain(k: Kernel, table: t.LiteralTable) -> Iterator[str]:
    """For an odd constant c > 1 (a one-tap literal): c = c' ± 2^e for every smaller odd constant
    c' > 1 already met, so the multiples of the input share one shift-and-add chain (5A = 3A + 2A
    once 3A exists)."""
    taps = k.trimmed().entries
    if len(taps) != 1 or taps[0][0] != (0, 0) or int(taps[0][1]) < 3:
        return
    c = int(taps[0][1])
    for key, lit in list(table.literals.items()):
        other = lit.trimmed().entries
        if len(other) != 1 or other[0][0] != (0, 0) or not 3 <= int(other[0][1]) < c:
            continue
        d = c - int(other[0][1])
        if d & (d - 1) == 0:
            yield t.kadd(f'(Lit "{key}")', _double(t.sh(0, 0), d.bit_length() - 1))


# ------------------------------------------------------------------ direct lowering (fallback)
def img_digit_planes(k: Kernel) -> str:
    """An Img term computing the dyadic kernel k from (Input) digit by digit, halving the input.

    Seeded beside every output so that extraction always has a lowered term, even when a
    resource limit stops saturation before the Apply rules reach the root. Digits 2^e with
    e > 0 reuse the `$double_E` lets of `img_powers` (written out, 2^e copies of the text).
    """
    terms = []
    for sign, e, x, y in tap_digits(k):
        term = f"$double_{e}" if e > 0 else "(Input)"
        for _ in range(-e):
            term = f"(Half {term})"
        if (x, y) != (0, 0):
            term = f"(Shift {term} {x} {y})"
        terms.append(term if sign > 0 else f"(Neg {term})")
    return t.balanced_sum(terms, op="Add")


def img_powers(outputs: dict[str, Kernel]) -> list[str]:
    """egglog `let`s $double_1..$double_E (the input times 2^e) for `img_digit_planes`."""
    top = max((e for k in outputs.values() for _, e, _, _ in tap_digits(k)), default=0)
    lines, prev = [], "(Input)"
    for e in range(1, top + 1):
        lines.append(f"(let $double_{e} (Add {prev} {prev}))")
        prev = f"$double_{e}"
    return lines
