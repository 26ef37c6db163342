"""What .kalg text means: exact kernels, settings, targets and the Module API."""

from fractions import Fraction

import pytest

from kalg.algebra.kernel import BOOLEAN, MAXPLUS, MINPLUS, REAL, Kernel
from kalg.diagnostics import KalgError, KalgSyntaxError
from kalg.frontend import Target, load_text

GAUSS3 = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
SOBEL_X = Kernel.from_rows([[1, None, -1], [2, None, -2], [1, None, -1]])


def kernel(text: str) -> Kernel:
    """The value of the last definition of `text`, a kernel."""
    definition = load_text(text).definition()
    assert definition.kind == "kernel"
    (value,) = definition.outputs.values()
    return value


def test_design_example():
    module = load_text("""
        # sobel.kalg — kernels are written as they look, north up; '.' = no entry
        kernel sobel_x = [ 1 . -1
                           2 . -2
                           1 . -1 ]
        kernel gauss3  = [1 2 1; 2 4 2; 1 2 1] / 16
        kernel smooth  = (1 + x) * (1 + x^-1) * (1 + y) * (1 + y^-1) / 16
        filter edges   = [A: sobel_x, B: transpose(sobel_x)]
        target scamp5 { registers: A..F, input: A, ops: all }
    """)
    assert list(module.definitions) == ["sobel_x", "gauss3", "smooth", "edges"]
    assert module.definitions["sobel_x"].outputs == {"A": SOBEL_X}
    assert module.definitions["gauss3"].outputs == {"A": GAUSS3}
    assert module.definitions["smooth"].outputs == {"A": GAUSS3}
    edges = module.definition()
    assert (edges.name, edges.kind) == ("edges", "filter")
    assert edges.outputs == {"A": SOBEL_X, "B": SOBEL_X.transpose()}
    assert edges.span.line == 8
    assert module.target == Target()


def test_matrices_are_north_up_and_centred():
    k = kernel("kernel k = [0 7 0; 0 0 3; 0 0 0]")
    assert k.trimmed().taps == {(0, 1): 7, (1, 0): 3}
    assert len(k) == 9  # zeros are entries


def test_no_entry_differs_from_zero():
    dots = kernel("kernel k = [. 1 .]")
    zeros = kernel("kernel k = [0 1 0]")
    assert dots.domain == {(0, 0)} and zeros.domain == {(-1, 0), (0, 0), (1, 0)}
    assert dots.same_values(zeros) and dots != zeros


def test_explicit_origin_is_row_and_column():
    assert kernel("kernel k = [1 2; 3 4] @ (0, 0)").taps == {
        (0, 0): 1, (1, 0): 2, (0, -1): 3, (1, -1): 4}
    assert kernel("kernel k = [1 2 3] @ (0, 2)").taps == {(-2, 0): 1, (-1, 0): 2, (0, 0): 3}


def test_monomials_shift_and_powers():
    assert kernel("kernel k = x").taps == {(1, 0): 1}  # east
    assert kernel("kernel k = y").taps == {(0, 1): 1}  # north
    assert kernel("kernel k = x^-2 * y^3") == Kernel.unit(-2, 3)
    assert kernel("kernel k = shift(-2, 3)") == Kernel.unit(-2, 3)
    assert kernel("kernel k = shift([1 2 1], 1, -1)") == Kernel.from_rows([[1, 2, 1]]).shift(1, -1)
    assert kernel("kernel k = shift(1 + 1, -(2 - 1))") == Kernel.unit(2, -1)
    assert kernel("kernel k = (1 + x)^2") == Kernel.of({(0, 0): 1, (1, 0): 2, (2, 0): 1})
    assert kernel("kernel k = [1 2 1]^0") == Kernel.unit()
    assert kernel("kernel k = x^1000 * shift(0, 2)^-3") == Kernel.unit(1000, -6)


def test_scalars_are_exact():
    row = Kernel.from_rows([[1, 2, 1]])
    assert kernel("kernel k = [1 2 1] * 3/4") == row.scale(Fraction(3, 4))
    assert kernel("kernel k = 0.5 * [1 2 1]") == row.scale(Fraction(1, 2))
    assert kernel("kernel k = [1 2 1] / 2 / 2") == row.scale(Fraction(1, 4))
    assert kernel("kernel k = [1 2 1] * 0.25") == row.scale(Fraction(1, 4))
    assert kernel("kernel k = [0.75 -1/8 .] @ (0, 0)").taps == {(0, 0): Fraction(3, 4),
                                                              (1, 0): Fraction(-1, 8)}


def test_sums_differences_and_reflections():
    assert kernel("kernel k = x - x^-1") == Kernel.of({(1, 0): 1, (-1, 0): -1})
    assert kernel("kernel k = -[1 . 2]") == Kernel.from_rows([[-1, None, -2]])
    assert kernel("kernel k = 1 + 1") == Kernel.unit(value=2)
    assert kernel("kernel k = flip([1 2 3])") == Kernel.from_rows([[3, 2, 1]])
    assert kernel("kernel k = mirror_x(x + y)") == Kernel.of({(-1, 0): 1, (0, 1): 1})
    assert kernel("kernel k = mirror_y(x + y)") == Kernel.of({(1, 0): 1, (0, -1): 1})
    assert kernel("kernel k = transpose([1 2 3])") == Kernel.from_rows([[1], [2], [3]])


def test_transpose_is_the_matrix_transpose_as_the_language_reference_says():
    # Regression (docs): docs/language.md said transpose "swaps x and y"; it transposes the
    # matrix as written, (dx, dy) -> (-dy, -dx): transpose(x) is one pixel SOUTH
    assert kernel("kernel k = transpose(x)") == Kernel.of({(0, -1): 1})
    assert kernel("kernel k = transpose(1 + x^2)") == Kernel.of({(0, 0): 1, (0, -2): 1})


def test_references_use_the_exact_value_of_earlier_kernels():
    k = kernel("""
        kernel third = [1 1 1] / 3 with approx depth 2
        kernel k = third * 3
    """)
    assert k == Kernel.from_rows([[1, 1, 1]])


def test_file_level_semiring_applies_to_later_definitions_only():
    module = load_text("""
        kernel a = [1 2 1]
        semiring minplus
        kernel b = [1 2 1] * 3
        kernel c = [1] with semiring maxplus
        semiring boolean
        kernel d = 1 + x
    """)
    semirings = {n: d.semiring for n, d in module.definitions.items()}
    assert semirings == {"a": REAL, "b": MINPLUS, "c": MAXPLUS, "d": BOOLEAN}
    assert module.definitions["b"].outputs["A"] == Kernel.from_rows([[4, 5, 4]], semiring=MINPLUS)
    assert module.definitions["d"].outputs["A"].taps == {(0, 0): True, (1, 0): True}


def test_min_plus_sum_is_minimum_and_composition_adds():
    k = kernel("semiring minplus\nkernel k = [0 5 inf] + [3 1 2] * 1")
    assert k.taps == {(-1, 0): 0, (0, 0): 2, (1, 0): 3}
    assert k.semiring is MINPLUS


def test_approximation_per_definition_and_file_level():
    module = load_text("""
        kernel exact = [1 2 1] / 4
        approx max_error 0.01
        kernel mean3 = [1 1 1] / 3
        kernel fixed = [1 1 1] / 3 with approx depth 2
        filter f = [A: [1 1 1] / 3, B: x / 2]
    """)
    exact = module.definitions["exact"]
    assert exact.approx_error == {} and exact.approx_depth == {}
    mean3 = module.definitions["mean3"]
    assert mean3.approx_depth == {"A": 6} and mean3.approx_error == {"A": Fraction(1, 192)}
    assert mean3.outputs["A"] == Kernel.from_rows([[21, 21, 21]]).scale(Fraction(1, 64))
    assert mean3.exact["A"] == Kernel.from_rows([[1, 1, 1]]).scale(Fraction(1, 3))
    fixed = module.definitions["fixed"]
    assert fixed.approx_depth == {"A": 2} and fixed.approx_error == {"A": Fraction(1, 12)}
    f = module.definitions["f"]
    assert f.approx_error == {"A": Fraction(1, 192)}
    assert f.outputs["B"] == Kernel.unit(1, 0, Fraction(1, 2))


def test_definitions_keep_file_order_and_kernels_output_to_the_input_register():
    module = load_text("""
        target scamp5 { registers: [B, C, D], input: C }
        kernel b = [1]
        filter a = [D: x, B: y]
    """)
    assert list(module.definitions) == ["b", "a"]
    assert list(module.definitions["b"].outputs) == ["C"]
    assert list(module.definitions["a"].outputs) == ["D", "B"]


def test_target_forms():
    module = load_text("target scamp5_wide { registers: A..C X, ops: basic, }\nkernel k = [1]")
    assert module.target == Target(("A", "B", "C", "X"), "A", "basic", "scamp5_wide")
    module = load_text("target scamp5 { registers: A..C F, ops: basic, }\nkernel k = [1]")
    assert module.target == Target(("A", "B", "C", "F"), "A", "basic")
    assert load_text("target scamp5 {}\nkernel k = [1]").target == Target()


def test_check_rejects_registers_beyond_f_that_optimize_rejects():
    """Issue 14: `kalg check` accepted `registers: A..Z`, which optimize refused unlocated."""
    with pytest.raises(KalgError) as caught:
        load_text("target scamp5 { registers: A..Z }\nkernel k = [1]", "t.kalg")
    assert "G..Z do not exist on SCAMP-5" in caught.value.message
    assert (caught.value.span.line, caught.value.span.column) == (1, 17)


def test_definition_lookup():
    module = load_text("kernel a = [1]\nkernel b = [2]")
    assert module.definition().name == "b"
    assert module.definition("a").name == "a"
    with pytest.raises(KalgError, match="its definitions are: a, b"):
        module.definition("c")


def test_keywords_are_reserved():
    with pytest.raises(KalgSyntaxError):
        load_text("kernel kernel = [1]")
    assert kernel("kernel kernels = [1]") == Kernel.unit()
