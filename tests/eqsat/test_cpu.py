"""The cpu target: sliding windows and integral images pay off under cost.cpu() and never under the
SCAMP-5 models; semiring kernels decompose by their own laws; every result is verified; and no
semiring's rules ever touch another semiring's terms."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.algebra.kernel import BOOLEAN, MAXPLUS, MINPLUS, REAL, Kernel
from kalg.cli import main
from kalg.diagnostics import KalgSemanticError, VerificationError
from kalg.eqsat import engine, extract
from kalg.eqsat.extract import ENode
from kalg.resources import rules_dir
from kalg.targets.cpu import cost as cpu_cost
from kalg.targets.cpu import optimize as cpu
from kalg.targets.scamp5 import cost, optimize

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BOX7 = Kernel.of({(x, y): 1 for x in range(-3, 4) for y in range(-3, 4)})


def _seeded_box7_graph() -> extract.Graph:
    from kalg.eqsat import analyses
    seeds = analyses.seed({"out": BOX7})
    facts = "\n".join([f"(let $k_out {seeds.roots['out']})"]
                      + [f"(union {lit} {term})" for lit, term, _ in seeds.unions])
    data, _ = engine.saturate(cpu.FAMILIES["real"], facts, cpu.schedule(REAL), cpu.DEFAULT_LIMITS)
    return extract.Graph(data)


def test_box7_is_a_sliding_window_under_cpu_costs():
    r = cpu.optimize_cpu(BOX7)
    assert "KPrefix 1 0" in r.term and "KPrefix 0 1" in r.term
    assert r.ops == 4 and r.direct_ops == 48  # two running sums and two differences
    assert "exactly" in r.verified
    assert sum(line.startswith("v") and "running_sum" in line for line in r.passes) == 2


def test_box7_never_uses_the_infinite_kernel_under_scamp5_costs():
    graph = _seeded_box7_graph()
    root = graph.lets["k_out"]
    reachable = graph.reachable([root], lambda n: True)
    prefixes = [n for c in reachable for n in graph.classes[c] if graph.nodes[n].op == "KPrefix"]
    assert prefixes, "the window rules did not fire: the comparison would be vacuous"
    cpu_term = cpu._text(cpu._term(graph, extract.greedy(graph, root, cpu_cost.cpu()), root))
    assert "KPrefix" in cpu_term
    scamp_term = cpu._text(cpu._term(graph, extract.greedy(graph, root, cost.kernel()), root))
    assert "KPrefix" not in scamp_term and "KSub" not in scamp_term
    node = graph.nodes[prefixes[0]]
    assert cost.kernel()(node) is None
    assert cost.scamp5("all")(node) is None and cost.scamp5("basic")(node) is None
    assert cpu_cost.cpu()(node) == 1.0


def test_scamp5_schedule_loads_none_of_the_cpu_families():
    # The golden SCAMP-5 programs depend on it: these families run under the cpu target only.
    assert not {"window", "minplus", "maxplus", "boolean"} & set(optimize.FAMILIES)


@pytest.mark.parametrize(("kernel", "most"), [
    (Kernel.of({(x, y): 0 for x in range(-1, 2) for y in range(-1, 2)}, MINPLUS), 4),
    (Kernel.of({(x, y): abs(x) + abs(y) for x in range(-2, 3) for y in range(-2, 3)}, MINPLUS),
     16),
    (Kernel.of({(x, y): -abs(x) - abs(y) for x in range(-1, 2) for y in range(-1, 2)}, MAXPLUS),
     8),
    (Kernel.of({(x, y): True for x in range(-3, 4) for y in range(-1, 2)}, BOOLEAN), 5),
    # idempotent ⊕: a run of 7 = run of 4 ⊗ (1 ⊕ x^3), a run of 4 = (1 ⊕ x) ⊗ (1 ⊕ x^2)
    (Kernel.of({(x, y): 0 for x in range(-3, 4) for y in range(-3, 4)}, MINPLUS), 6),
])
def test_semiring_kernels_decompose_by_their_own_laws(kernel, most):
    r = cpu.optimize_cpu(kernel)
    assert r.ops <= most < r.direct_ops
    prefix = {"minplus": "Min", "maxplus": "Max", "boolean": "Bool"}[kernel.semiring.name]
    ops = set(re.findall(r"\((\w+)", r.term))
    assert ops and all(op.startswith(prefix) for op in ops)
    assert f"{prefix}Compose" in ops


small = st.dictionaries(st.tuples(st.integers(-1, 1), st.integers(-1, 1)), st.integers(0, 4),
                        min_size=1, max_size=9)


@settings(max_examples=6, deadline=None)
@given(taps=small, semiring=st.sampled_from([REAL, MINPLUS, MAXPLUS, BOOLEAN]))
def test_any_small_kernel_gives_a_verified_decomposition(taps, semiring):
    if semiring is BOOLEAN:
        k = Kernel.of({o: True for o in taps}, BOOLEAN)
    elif semiring is REAL:
        k = Kernel.of({o: c or 1 for o, c in taps.items()})
    else:
        k = Kernel.of(taps, semiring)
    r = cpu.optimize_cpu(k)  # raises VerificationError if the passes are wrong
    assert r.ops <= r.direct_ops


def test_verification_catches_a_wrong_decomposition():
    program = cpu.Passes(REAL)
    out = program.apply(["KCompose", ["KSub", ["Sh", 0, 0], ["Sh", 6, 0]], ["KPrefix", 1, 0]], 0)
    row7 = Kernel.of({(x, 0): 1 for x in range(7)})
    row6 = Kernel.of({(x, 0): 1 for x in range(6)})
    assert cpu.verify(program, out, row6)
    with pytest.raises(VerificationError):
        cpu.verify(program, out, row7)


def test_a_non_dyadic_kernel_is_exact_on_the_cpu():
    # a CPU multiplies: 1/9 needs no approximation (SCAMP-5's halving limit is not the cpu's)
    box = Kernel.of({(x, y): Fraction(1, 9) for x in (-1, 0, 1) for y in (-1, 0, 1)})
    r = cpu.optimize_cpu(box)
    assert "exactly" in r.verified and r.passes[-2].endswith(", 1/9)")
    assert r.ops <= 5


def test_unsupported_kernels_are_clear_errors():
    with pytest.raises(KalgSemanticError, match=r"finite minplus weights.*-inf.*'\.'"):
        cpu.optimize_cpu(Kernel.of({(0, 0): float("-inf"), (1, 0): 0}, MINPLUS))
    with pytest.raises(KalgSemanticError, match="zero"):
        cpu.optimize_cpu(Kernel.empty())


def test_fractional_min_and_max_plus_weights_decompose_exactly():
    # Regression: a chamfer step of 1 and 7/5 (or any weight that is not an integer) was
    # refused ("the cpu optimizer takes integer minplus weights"); the weights are now optimized
    # times their common denominator and divided back, and verified in exact arithmetic (float
    # images made 2/5 + 1/2 differ from 9/10 in the last bit)
    d = Fraction(7, 5)
    step = Kernel.from_rows([[d, 1, d], [1, 0, 1], [d, 1, d]], semiring=MINPLUS)
    r = cpu.optimize_cpu(step)
    assert "exactly" in r.verified and "add_const(v0@(-1,-1), 7/5)" in "\n".join(r.passes)
    a, b, c = Fraction(1, 10), Fraction(1, 5), Fraction(3, 10)
    row = Kernel.from_rows([[a, b, a]], semiring=MAXPLUS)
    column = Kernel.from_rows([[c], [0], [c]], semiring=MAXPLUS)
    r = cpu.optimize_cpu(row.compose(column))
    assert "exactly" in r.verified and r.ops < r.direct_ops


# ------------------------------------------------------------------ semirings stay apart
SORTS = {
    "minplus": {"MinLit", "MinTap", "MinMin", "MinCompose"},
    "maxplus": {"MaxLit", "MaxTap", "MaxMax", "MaxCompose"},
    "boolean": {"BoolLit", "BoolTap", "BoolOr", "BoolCompose"},
}
SEMIRING_CONSTRUCTORS = set().union(*SORTS.values())
PRIMITIVES = {"+", "-", "*", "min", "max", "abs"}


def _rule_constructors(family: str) -> set[str]:
    text = re.sub(r";[^\n]*", "", (rules_dir() / f"{family}.egg").read_text())
    rules = [m.start() for m in re.finditer(r"\((rewrite|birewrite|rule)\b", text)]
    heads: set[str] = set()
    for start in rules:
        depth, i = 0, start
        while True:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        heads |= set(re.findall(r"\(([A-Za-z][\w-]*)", text[start:i]))
    return heads - {"rewrite", "birewrite", "rule", "union", "=", "!=", "<=", "<", ">", ">="}


@pytest.mark.parametrize("family", sorted(SORTS))
def test_semiring_rules_use_only_their_own_constructors(family):
    used = _rule_constructors(family) - PRIMITIVES
    assert used and used <= SORTS[family], used - SORTS[family]


@pytest.mark.parametrize("family", ["ring", "distributivity", "window", "lower", "retime",
                                    "scamp5"])
def test_real_rules_use_no_semiring_constructor(family):
    assert not _rule_constructors(family) & SEMIRING_CONSTRUCTORS


def _sizes(program: str, tables: list[str]) -> list[int]:
    text = engine.load_rules(("ring", "distributivity", "window", "minplus", "maxplus",
                              "boolean"))
    prints = "\n".join(f"(print-size {t})" for t in tables)
    outputs = engine.run_program(text + "\n" + program + "\n" + prints)
    return [int(s) for s in outputs[-len(tables):]]


TERMS = """
(let $ab (KCompose (Lit "a") (KAdd (Sh 0 0) (Sh 1 0))))
(let $m (MinCompose (MinLit "a") (MinMin (MinTap 0 0 0) (MinTap 1 0 0))))
(let $x (MaxCompose (MaxLit "a") (MaxMax (MaxTap 0 0 0) (MaxTap 1 0 0))))
(let $b (BoolCompose (BoolLit "a") (BoolOr (BoolTap 0 0) (BoolTap 1 0))))
"""
REAL_TABLES = ["KCompose", "KAdd", "KSub", "KRun", "KPrefix", "Sh"]
MIN_TABLES = ["MinCompose", "MinMin", "MinTap"]
OTHER_TABLES = ["MaxCompose", "MaxMax", "MaxTap", "BoolCompose", "BoolOr", "BoolTap"]


def test_no_min_plus_rule_matches_a_real_term_and_vice_versa():
    tables = REAL_TABLES + MIN_TABLES + OTHER_TABLES
    before = _sizes(TERMS, tables)
    after_min = _sizes(TERMS + "(run-schedule (saturate (run minplus) (run minplus-ac)))", tables)
    after_real = _sizes(TERMS + "(run-schedule (repeat 4 (run ring) (run distributivity) "
                                "(run window)))", tables)
    n_real, n_min = len(REAL_TABLES), len(REAL_TABLES) + len(MIN_TABLES)
    # the min-plus rules change min-plus terms only ...
    assert after_min[:n_real] == before[:n_real] and after_min[n_min:] == before[n_min:]
    assert after_min[n_real:n_min] != before[n_real:n_min]
    # ... and the real rules change real terms only
    assert after_real[n_real:] == before[n_real:]
    assert after_real[:n_real] != before[:n_real]


# ------------------------------------------------------------------ command line
def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_kalg_optimize_target_cpu_compiles_the_min_plus_example(capsys):
    code, out, err = _run(capsys, "optimize", str(EXAMPLES / "chamfer.kalg"), "--target", "cpu")
    assert code == 0, err
    assert "minplus kernel with 25 taps" in out and "ops/pixel" in out and "verified" in out
    assert re.search(r"^out <- ", out, re.M)


def test_kalg_optimize_target_cpu_box7_and_stages(capsys):
    code, out, _ = _run(capsys, "optimize", str(EXAMPLES / "box7.kalg"), "--target", "cpu",
                        "--emit", "decomposition")
    assert code == 0 and "cost: 4 ops/pixel" in out and "running_sum" in out
    code, out, _ = _run(capsys, "optimize", str(EXAMPLES / "box7.kalg"), "--target", "cpu",
                        "--emit", "egraph")
    assert code == 0 and "e-nodes" in out
    code, _, err = _run(capsys, "optimize", str(EXAMPLES / "box7.kalg"), "--target", "cpu",
                        "--emit", "program")
    assert code == 2 and "no program" in err and "Traceback" not in err  # a usage error


def test_cpu_output_is_deterministic(capsys):
    outs = {_run(capsys, "optimize", str(EXAMPLES / "chamfer.kalg"), "--target", "cpu")[1]
            for _ in range(2)}
    assert len(outs) == 1


def test_cost_models_agree_on_img_nodes():
    # cpu() grew Kernel-level prices; its Img prices are unchanged
    node = ENode("n", "Add", "c", ("a", "b"), ())
    model = cpu_cost.cpu()
    assert model(node) == 1.0 and model(ENode("s", "Shift", "c", ("a",), (1, 0))) == 0


def test_single_weighted_tap_is_not_costlier_than_tap_by_tap():
    # regression: {(0,0): 3} came out as 4 shift-and-add passes where one multiply does
    r = cpu.optimize_cpu(Kernel.of({(0, 0): 3}))
    assert (r.ops, r.forms) == (1, ["direct"])
    assert r.passes == ["v1 = mul(v0, 3)", "out <- v1"]


def test_a_31x31_box_costs_what_smaller_boxes_cost():
    # was 12 ops/pixel and a minute: the SCAMP-5 analyses of the 961-tap literal flooded the
    # e-graph before any run formed; large separable kernels are now seeded through factors
    for n in (5, 31):
        r = cpu.optimize_cpu(Kernel.of({(x, y): 1 for x in range(-(n // 2), n // 2 + 1)
                                        for y in range(-(n // 2), n // 2 + 1)}))
        assert r.ops == 4, (n, r.passes)


def test_random_15x15_optimizes_and_verifies_quickly():
    import time
    rng = __import__("numpy").random.default_rng(3)
    k = Kernel.of({(x, y): int(rng.integers(-9, 10)) for x in range(-7, 8) for y in range(-7, 8)})
    start = time.perf_counter()
    r = cpu.optimize_cpu(k)
    assert time.perf_counter() - start < 20 and r.ops <= r.direct_ops


def test_binomial_over_a_power_of_two_is_one_scale_not_halvings():
    row = Kernel.of({(x, 0): c for x, c in zip(range(-4, 5), [1, 8, 28, 56, 70, 56, 28, 8, 1],
                                               strict=True)})
    k = row.compose(row.transpose()).scale(Fraction(1, 65536))
    r = cpu.optimize_cpu(k)
    assert r.ops == 17 and not any("half" in line for line in r.passes)


def test_copying_passes_rebuilds_each_shared_value_once(tmp_path, capsys):
    # Regression (issue 11 audit): Passes.copy rebuilt a value once per path to it, exponential
    # in the depth of shared values: `kalg optimize --target cpu` on a 15x15 binomial (its
    # doublings) ran for minutes, a 31x31 one past 300 s
    source = cpu.Passes(REAL)
    v = 0
    for _ in range(60):
        v = source.node("plus", (v, v))
    copy = cpu.Passes(REAL)
    assert copy.ops(copy.copy(source, v)) == 60 and len(copy.values) == 61
    path = tmp_path / "g15.kalg"
    path.write_text("kernel g = (1 + x)^14 * (1 + y)^14 * shift(-7, -7) / 2^28\n")
    assert main(["optimize", str(path), "--target", "cpu"]) == 0
    assert "# verified: exactly" in capsys.readouterr().out


def test_a_15x15_binomial_is_one_add_per_tap_along_each_axis():
    # Regression (issue 11 audit): the two factors of a large separable kernel shared one
    # literal budget and the row got a poor form: (1 + x)^14 (1 + y)^14 / 2^28 cost 96
    # ops/pixel, where 14 adds per axis and one scale are 29
    row = Kernel.of({(x, 0): math.comb(14, x + 7) for x in range(-7, 8)})
    k = row.compose(row.transpose()).scale(Fraction(1, 2 ** 28))
    r = cpu.optimize_cpu(k)
    assert r.ops == 29 and "exactly" in r.verified


def test_a_composed_definition_stays_factored(tmp_path, capsys):
    # `cross * cross` came out tap by tap (20 ops); each factor is 3 ops with a shared pair
    path = tmp_path / "cc.kalg"
    path.write_text("kernel cross = [0 1 0; 1 1 1; 0 1 0]\nkernel cc = cross * cross\n")
    assert main(["optimize", str(path), "--target", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "# cost: 6 ops/pixel" in out and "composition of factors" in out
