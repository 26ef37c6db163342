"""The optimizer: output kernels → seeded e-graph → bounded saturation → DAG extraction.

Input: the kernels of one filter (register → dyadic real Kernel). Output: an `Optimized` holding
the chosen `Decomposition` and the facts about the search (e-graph size, stop reason, times).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kalg import workers
from kalg.algebra.decomp import DagBuilder, Decomposition
from kalg.algebra.kernel import Kernel
from kalg.clock import Clock
from kalg.diagnostics import KalgSemanticError
from kalg.eqsat import analyses, engine, extract, variants
from kalg.eqsat.dag_terms import same_dag, seed
from kalg.eqsat.terms import parse
from kalg.eqsat.variants import Variant
from kalg.targets.scamp5 import cost

FAMILIES = ("ring", "distributivity", "lower", "retime", "scamp5")
"""Rule families the SCAMP-5 schedule loads (rules/NAME.egg)."""

ALGEBRA = (engine.Phase(("ring",), 6),)
"""First e-graph: Kernel terms only - factor orders, halving placement, shifts across sums. Six
iterations: enough for each ring law to apply a few times in turn, while the e-graph that is
serialised and ranked stays small (it grows with every iteration). More is not better: the
variants are ranked by their Kernel-term cost, not by the programs they lower to, and a larger
e-graph offers more variants that rank well and lower worse."""

LOWERING = (
    engine.Phase(("lower",), 10),
    engine.Phase(("lower", "retime"), 1),
)
"""Second e-graph: the chosen variants become register operations, then SCAMP-5 macros."""


@dataclass(frozen=True, slots=True)
class Options:
    op_set: str = "all"
    limits: engine.SaturationLimits = field(default_factory=engine.SaturationLimits)
    max_literals: int = 30
    variants: int = 4
    extraction_seconds: float | None = None
    ilp_max_nodes: int = 6_000
    also: tuple[str, ...] = ()
    """Further op sets to extract the lowering e-graph under (`Optimized.extra`): the same
    saturation, another cost model."""


@dataclass
class Optimized:
    decomposition: Decomposition
    cost: float
    optimal: bool
    saturation: engine.SaturationReport
    eclasses: int
    enodes: int
    literals: int
    applied: Decomposition
    """Each output's best variant, halvings first, applied to the input as written."""
    variants: dict[str, list[str]] = field(default_factory=dict)
    provenance: list[str] = field(default_factory=list)
    """The analyses and rule families behind the variants extraction chose (`decomposition`)."""
    applied_provenance: list[str] = field(default_factory=list)
    """The same for `applied` (each output's best variant)."""
    algebra: engine.SaturationReport | None = None
    analyses: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Decomposition] = field(default_factory=dict)
    """The decomposition extracted under each op set of `Options.also`."""
    as_written: Decomposition | None = None
    """The outputs written as algebra applied as written (others by their digit planes);
    None when no output has a written term."""
    seeded: dict[str, Seeded] = field(default_factory=dict)
    """Each seeded decomposition's extraction (`optimize`'s `seeded`, and `APPLIED`,
    `AS_WRITTEN`), by the name it was seeded under; empty when nothing was seeded."""


APPLIED = "e-graph variants"
"""The name `Optimized.seeded` gives `Optimized.applied`'s extraction: the name of its
decomposition source (`sources.EGRAPH_VARIANTS`), so a seed is found by its source's name."""

AS_WRITTEN = "as written"
"""The name `Optimized.seeded` gives `Optimized.as_written`'s extraction (`sources.AS_WRITTEN`)."""


@dataclass(frozen=True, slots=True)
class Seeded:
    """The extraction rooted at a seeded decomposition: the cheapest DAG whose outputs are the
    seed's own root e-nodes (everything below them the extractor's choice)."""

    decomposition: Decomposition
    """The seed's own DAG where the extractor chose it (`same`), else the extracted DAG."""
    same: bool
    """Whether the extractor chose the seed's own term, value for value."""
    cost: float
    """Its cost under the op set's cost model, each node paid once."""


def optimize(outputs: dict[str, Kernel], options: Options = Options(),
             written: dict[str, tuple] | None = None,
             seeded: dict[str, Decomposition] | None = None) -> Optimized:
    """Find the cheapest decomposition of `outputs` (register → kernel) under SCAMP-5 costs.

    Two bounded saturations: the algebra (seeded Kernel terms and the ring laws), from which the
    cheapest few Kernel terms of each output are extracted; then the lowering of only those terms
    to register operations, from which one DAG for all outputs is extracted (ILP, shared work
    paid once).

    `seeded` (name → a decomposition source's DAG of `outputs`): each is seeded into the
    saturated lowering e-graph, its outputs in their outputs' e-classes, as are `applied` and
    `as_written` (named `APPLIED`, `AS_WRITTEN`); one extraction rooted at each
    (`Optimized.seeded`). The e-graph's own extraction (`decomposition`) is made before, so
    it is the same with or without seeds. None: nothing is seeded.
    """
    _check_outputs(outputs)
    clock = Clock()
    seeds = analyses.seed(outputs, options.max_literals, written)
    clock.lap("analyse")
    data, algebra = engine.saturate(FAMILIES, algebra_facts(seeds), ALGEBRA, options.limits)
    kgraph = extract.Graph(data)
    roots = {name: kgraph.lets[f"k_{name}"] for name in seeds.roots}
    forms = variants.variants(kgraph, roots, cost.kernel(), options.variants)
    unions = [(term, analysis) for _, term, analysis in seeds.unions]

    def origin(picked: dict[str, Variant | None]) -> list[str]:
        """The analyses and rules behind the variants `picked` (None: the digit planes)."""
        nodes = frozenset(n for v in picked.values() if v is not None for n in v.nodes)
        found = variants.provenance(kgraph, unions, nodes, "ring laws", seeds.introduced)
        if any(v is None for v in picked.values()):
            found = sorted({*found, "digit-planes"})
        return [*found, "lowering"]

    clock.lap("algebra")
    halved = {name: [variants.halvings_first(v.term) for v in vs] for name, vs in forms.items()}
    sources = {name: _interleave([v.term for v in vs], halved[name])
               for name, vs in forms.items()}
    offered = {name: list(terms) for name, terms in sources.items()}
    applied = apply_terms({name: forms[0] for name, forms in halved.items()})
    as_written = _as_written(seeds)
    if seeded is not None:
        seeded = {**seeded, APPLIED: applied,
                  **({} if as_written is None else {AS_WRITTEN: as_written})}
    data, report = engine.saturate(FAMILIES, lowering_facts(offered, seeds.outputs), LOWERING,
                                   options.limits)
    clock.lap("lowering")
    graph = extract.Graph(data)
    model = cost.scamp5(options.op_set)
    root = graph.lets["root"]
    choice, optimal, extra = _extractions(graph, options, sorted(outputs))
    clock.lap("extract")
    picked = variants.chosen_forms(graph, choice, _output_classes(graph, choice, list(offered)),
                                   offered)
    extracted = {name: None if i is None else forms[name][sources[name][offered[name][i]]]
                 for name, i in picked.items()}
    counts: dict[str, int] = {}
    for _, _, name in seeds.unions:
        counts[name] = counts.get(name, 0) + 1
    decomposition = to_decomposition(graph, choice, sorted(outputs))
    cost_of = extract.choice_cost(graph, root, choice, model)
    # seeded last: the e-graph's own extraction above is that of the unseeded graph
    extractions = _seeded(graph, model, seeded or {}, options, sorted(outputs))
    return Optimized(
        decomposition=decomposition,
        applied=applied,
        cost=cost_of,
        optimal=optimal,
        saturation=report,
        eclasses=len(graph.classes),
        enodes=len(graph.nodes),
        literals=len(seeds.literals),
        variants=offered,
        provenance=origin(extracted),
        applied_provenance=origin({name: vs[0] for name, vs in forms.items()}),
        algebra=algebra,
        analyses=counts,
        seconds=clock.laps,
        extra=extra,
        as_written=as_written,
        seeded=extractions,
    )


def _as_written(seeds: analyses.Seeds) -> Decomposition | None:
    """Each output's "as-written" term applied to the input, its literals by their digit
    planes (the user's structure, with no search); None when no output has one."""
    written = {name: term for lit, term, analysis in seeds.unions if analysis == "as-written"
               for name, root in seeds.roots.items() if root == lit}
    if not written:
        return None
    terms = {}
    for name, root in seeds.roots.items():
        term = written.get(name, root)
        terms[name] = _LITERAL_TERM.sub(
            lambda m: next(analyses.digit_planes(seeds.literals[m.group(1)])), term)
    return apply_terms(terms)


_LITERAL_TERM = re.compile(r'\(Lit "([^"]*)"\)')

def _extractions(graph: extract.Graph, options: Options, names: list[str],
                 ) -> tuple[extract.Choice, bool, dict[str, Decomposition]]:
    """The choice under `options.op_set` (and whether it is proven optimal), and the
    decomposition extracted under each op set of `options.also`. The extractions are
    independent ILPs over one graph (about 0.15 s each for a 3x3 kernel): `workers.ordered_map`
    solves them on this process and a forked one, and each is the serial solve's choice."""
    op_sets = (options.op_set, *options.also)
    found = workers.ordered_map(lambda i: _extract(graph, cost.scamp5(op_sets[i]), options),
                                len(op_sets))
    (choice, optimal), rest = found[0], found[1:]
    extra = {op_set: to_decomposition(graph, also, names)
             for op_set, (also, _) in zip(options.also, rest, strict=True)}
    return choice, optimal, extra


def _extract(graph: extract.Graph, model: extract.Cost, options: Options,
             ) -> tuple[extract.Choice, bool]:
    """The ILP's choice under `model` (and whether it is proven optimal), else greedy's."""
    try:
        return extract.ilp(graph, graph.lets["root"], model, options.extraction_seconds,
                           max_nodes=options.ilp_max_nodes)
    except TimeoutError:
        return extract.greedy(graph, graph.lets["root"], model), False


def _seeded(graph: extract.Graph, model: extract.Cost, seeded: dict[str, Decomposition],
            options: Options, names: list[str]) -> dict[str, Seeded]:
    """Each decomposition of `seeded` put into the saturated `graph`, each output's root
    e-node in its output's e-class (`dag_terms.seed`, the J-th tagged `sJ`), then one
    extraction rooted at each: its outputs' e-classes may choose only the seed's root e-nodes,
    every other e-class what is cheapest (the seed's own terms, or what the rules put beside
    the values it shares with the e-graph). Where the choice is the seed's own term, the
    seed's DAG itself (built in its own order, so the code generator sees what the source
    built). Mutates `graph`."""
    root = graph.lets["root"]
    classes = {name: graph.lets[f"out_{name}"] for name in names}
    planted = [seed(graph, d, f"s{j}", classes) for j, d in enumerate(seeded.values())]

    def one(j: int) -> Seeded:
        d, nodes = list(seeded.values())[j], planted[j]
        pins: dict[str, str] = {}
        for _, i in d.outputs:
            pins.setdefault(graph.nodes[nodes[i]].eclass, nodes[i])
        pinned = _pinned(model, pins)
        choice, _ = _extract(graph, pinned, options)
        found = to_decomposition(graph, choice, names)
        same = same_dag(found, d)
        return Seeded(d if same else found, same, extract.choice_cost(graph, root, choice, model))

    return dict(zip(seeded, workers.ordered_map(one, len(seeded)), strict=True))


def _pinned(model: extract.Cost, pins: dict[str, str]) -> extract.Cost:
    """`model`, with each e-class of `pins` allowed only its pinned e-node."""
    def cost(node: extract.ENode) -> float | None:
        pin = pins.get(node.eclass)
        return None if pin is not None and node.id != pin else model(node)
    return cost


def _interleave(forms: list[str], halved: list[str]) -> dict[str, int]:
    """Each variant, followed by its halvings-first form when that differs (outputs share the
    halved input only if their halvings come first; extraction decides if that pays), each
    with the index of the variant it came from."""
    out: dict[str, int] = {}
    for i, (form, first) in enumerate(zip(forms, halved, strict=True)):
        out.setdefault(form, i)
        out.setdefault(first, i)
    return out


def _output_classes(graph: extract.Graph, choice: extract.Choice,
                    names: list[str]) -> dict[str, str]:
    """Each output's Img e-class, read from the bundle `$root` (outputs in `names` order)."""
    classes: dict[str, str] = {}
    bundle = graph.nodes[choice[graph.lets["root"]]]
    for name in names:
        classes[name] = bundle.children[0]
        bundle = graph.nodes[choice[bundle.children[1]]]
    return classes


def _check_outputs(outputs: dict[str, Kernel]) -> None:
    for name, k in outputs.items():
        if not k.trimmed().entries:
            raise KalgSemanticError(
                f"output {name} is the zero kernel: there is nothing to compute")
        if not k.is_dyadic():
            raise KalgSemanticError(
                f"output {name} has non-dyadic coefficients; SCAMP-5 can only halve: "
                "approximate it first (an 'approx' setting)")


def algebra_facts(seeds: analyses.Seeds) -> str:
    """egglog text: one `let $k_NAME` Kernel term per output, and the seeded unions."""
    lines = [f"(let $k_{name} {term})" for name, term in seeds.roots.items()]
    lines += [f"(union {lit} {term})" for lit, term, _ in seeds.unions]
    return "\n".join(lines)


def lowering_facts(forms: dict[str, list[str]], outputs: dict[str, Kernel]) -> str:
    """egglog text: each output's variants applied to the input, unioned, and the bundle `$root`.

    The tap-by-tap digit-plane sum is unioned too, so a lowered term exists whatever the limits.
    """
    radius = max(k.radius() for k in outputs.values())
    lines = [f"(set (MaxOffset) {radius + 1})", *analyses.img_powers(outputs)]
    for name, terms in forms.items():
        lines.append(f"(let $out_{name} {analyses.img_digit_planes(outputs[name])})")
        lines += [f"(union $out_{name} (Apply {term} (Input)))" for term in terms]
    bundle = "(ONil)"
    for name in reversed(list(forms)):
        bundle = f"(OCons $out_{name} {bundle})"
    lines.append(f"(let $root {bundle})")
    return "\n".join(lines)


def to_decomposition(graph: extract.Graph, choice: extract.Choice,
                     names: list[str]) -> Decomposition:
    """Turn the chosen Img nodes into SSA values; fused macros become their generic parts."""
    b = DagBuilder()
    memo: dict[str, int] = {}

    def value(cid: str) -> int:
        if (done := memo.get(cid)) is not None:
            return done
        node = graph.nodes[choice[cid]]
        memo[cid] = _lower_node(b, node, [value(k) for k in node.children], graph, choice)
        return memo[cid]

    return b.build({name: value(cid)
                    for name, cid in _output_classes(graph, choice, names).items()})


def apply_terms(terms: dict[str, str]) -> Decomposition:
    """Register operations that apply each Kernel term to the input, as the lower rules do with
    halvings before their operand (apply-half-input) and factors inner first; equal values are
    computed once (hash-consing), so outputs share their halved inputs and common factors."""
    b = DagBuilder()
    return b.build({name: _apply(b, parse(term), b.input)
                    for name, term in sorted(terms.items())})


def _apply(b: DagBuilder, term: list, image: int) -> int:
    match term[0]:
        case "Sh":
            return b.shift(image, int(term[1]), int(term[2]))
        case "KAdd":
            return b.add(_apply(b, term[1], image), _apply(b, term[2], image))
        case "KSub":
            return b.sub(_apply(b, term[1], image), _apply(b, term[2], image))
        case "KNeg":
            return b.neg(_apply(b, term[1], image))
        case "KHalf":
            return _apply(b, term[1], b.half(image))
        case "KCompose":
            return _apply(b, term[1], _apply(b, term[2], image))
    raise ValueError(f"not an extracted Kernel term: {term[0]}")


def direct_decomposition(outputs: dict[str, Kernel]) -> Decomposition:
    """Each output by Horner's rule over its digit planes, one tap at a time: a candidate that
    always exists and keeps few values live (input, accumulator, one moved copy).

    k = 2^e_max · (S_e_max + (S_e_max-1 + (... + S_e_min / 2 ...) / 2) / 2), where S_e is the
    signed sum of the taps whose power-of-two digit has exponent e.
    """
    b = DagBuilder()
    results = {name: horner(b, k) for name, k in sorted(outputs.items())}
    return b.build(results)


def horner(b: DagBuilder, k: Kernel, source: int | None = None, from_top: bool = False,
           ) -> int:
    """Value of k applied to `source` (default: the input) by Horner's rule over its digit
    planes, one tap at a time: from the lowest plane up, halving between planes, then scaled
    to the highest plane's power of two; `from_top` (k an integer kernel): from the highest
    plane down to the units, doubling between planes, with no halving at all (a factor of a
    chain, `codegen.chain`). The one Horner over DAG values: the direct candidate, the
    separable candidate's row and column, and every factor of a chain."""
    source = b.input if source is None else source
    planes: dict[int, list[tuple[int, int, int]]] = {}
    for sign, e, x, y in analyses.tap_digits(k):
        planes.setdefault(e, []).append((sign, x, y))
    if from_top:
        steps, between = range(max(planes), -1, -1), lambda v: b.add(v, v)
    else:
        steps, between = range(min(planes), max(planes) + 1), b.half
    acc: int | None = None
    for e in steps:
        if acc is not None:
            acc = between(acc)
        for sign, x, y in planes.get(e, []):
            acc = b.signed_sum(acc, b.shift(source, x, y), sign)
    assert acc is not None
    return acc if from_top else b.scaled(acc, max(planes))


def _lower_node(b: DagBuilder, node: extract.ENode, kids: list[int], graph, choice) -> int:
    match node.op:
        case "Input":
            return b.input
        case "Shift":
            return b.shift(kids[0], *node.args)
        case "Add":
            return b.add(kids[0], kids[1])
        case "Sub":
            return b.sub(kids[0], kids[1])
        case "Neg":
            return b.neg(kids[0])
        case "Half" | "Div" | "HalfOf":
            return b.half(kids[0]) if node.op != "HalfOf" else kids[0]
        case "NegHalfOf":
            return b.neg(kids[0])
        case "Add3":
            return b.add(b.add(kids[0], kids[1]), kids[2])
        case "AddMv":
            return b.shift(b.add(kids[0], kids[1]), *node.args)
        case "SubMv":
            return b.sub(b.shift(kids[0], *node.args), kids[1])
    raise AssertionError(f"cannot lower e-node {node.op}")

