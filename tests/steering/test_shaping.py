"""Tests for the scalar shaping functions (thesis sections 6.4.3 to 6.4.5)."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starling.steering import shaping as sh

# --- registries of the easing curves ---------------------------------------

# name -> (function, takes the power parameter l)
EASINGS = {
    "q1": (sh.f_q1, True),
    "q2": (sh.f_q2, True),
    "q3": (sh.f_q3, True),
    "q4": (sh.f_q4, True),
    "s1": (sh.f_s1, False),
    "s2": (sh.f_s2, False),
    "s3": (sh.f_s3, True),
    "s4": (sh.f_s4, True),
    "s5": (sh.f_s5, False),
    "b1": (sh.f_b1, False),
    "b2": (sh.f_b2, True),
    "b3": (sh.f_b3, True),
    "b4": (sh.f_b4, True),
    "b5": (sh.f_b5, False),
    "b6": (sh.f_b6, False),
}

INCREASING = ("q1", "q4", "s1", "s2", "s3", "s4", "s5")
DECREASING = ("q2", "q3")
BELLS = ("b1", "b2", "b3", "b4", "b5", "b6")

# name -> (f(0), f(1))
END_POINTS = {name: (0.0, 1.0) for name in INCREASING}
END_POINTS.update({name: (1.0, 0.0) for name in DECREASING})
END_POINTS.update({name: (0.0, 0.0) for name in BELLS})

TOL = 1e-12

unit = st.floats(min_value=0.0, max_value=1.0)
any_x = st.floats(allow_nan=False, allow_infinity=True)
power = st.floats(min_value=0.25, max_value=8.0)
# Below l = 1 the bells have an infinitely steep peak (and f_s3 infinitely
# steep ends), so rounding 1 - x in the test input alone breaks symmetry by
# far more than an ulp; symmetry is only checked where the curves are
# Lipschitz.
lipschitz_power = st.floats(min_value=1.0, max_value=8.0)
PROPERTY = settings(deadline=None, max_examples=60)


def call(name: str, x: float, l: float = 2.0) -> float:
    fn, takes_l = EASINGS[name]
    return fn(x, l) if takes_l else fn(x)


# --- registry and names -----------------------------------------------------


def test_every_easing_name_has_a_distinct_code_in_thesis_order():
    assert sh.EASING_NAMES == tuple(EASINGS)
    assert sh.EASING_CODES == {name: i for i, name in enumerate(EASINGS)}


@pytest.mark.parametrize("name", list(EASINGS))
def test_easing_code_resolves_every_valid_name(name):
    assert sh.easing_code(name) == sh.EASING_NAMES.index(name)


@pytest.mark.parametrize("bad", ["q5", "Q1", "f_q1", "", None])
def test_easing_code_rejects_unknown_names_and_lists_the_valid_ones(bad):
    with pytest.raises(ValueError) as info:
        sh.easing_code(bad)
    message = str(info.value)
    for name in sh.EASING_NAMES:
        assert name in message


# --- hand-computed values ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "x", "l", "expected"),
    [
        ("q1", 0.5, 2.0, 0.25),
        ("q1", 0.5, 3.0, 0.125),
        ("q2", 0.5, 2.0, 0.75),
        ("q2", 0.5, 1.0, 0.5),
        ("q3", 0.25, 2.0, 0.5625),
        ("q4", 0.25, 2.0, 0.4375),
        ("s1", 0.25, 0.0, 0.15625),
        ("s1", 0.5, 0.0, 0.5),
        ("s2", 0.25, 0.0, 0.103515625),
        ("s2", 0.5, 0.0, 0.5),
        ("s3", 0.25, 2.0, 0.125),
        ("s3", 0.75, 2.0, 0.875),
        ("s3", 0.25, 3.0, 0.0625),
        # |0.5 - 1|^4 - 2 |0.5 - 1|^2 + 1 = 0.0625 - 0.5 + 1
        ("s4", 0.5, 2.0, 0.5625),
        ("s4", 0.5, 1.0, 0.25),
        ("s5", 0.5, 0.0, 0.5),
        ("s5", 1.0 / 3.0, 0.0, 0.25),
        ("b1", 0.25, 0.0, 0.5),
        ("b1", 0.5, 0.0, 1.0),
        ("b2", 0.25, 2.0, 0.75),
        ("b3", 0.125, 2.0, 0.125),
        ("b3", 0.25, 2.0, 0.5),
        ("b4", 0.25, 2.0, 0.5625),
        ("b5", 0.125, 0.0, 0.15625),
        ("b6", 0.375, 0.0, 0.896484375),
    ],
)
def test_easing_matches_hand_computed_value(name, x, l, expected):
    assert call(name, x, l) == pytest.approx(expected, abs=TOL)


def test_s4_equals_the_thesis_polynomial_form():
    for l in (1.0, 2.0, 3.0, 4.5):
        for i in range(11):
            x = i / 10
            u = abs(x - 1.0)
            assert sh.f_s4(x, l) == pytest.approx(u ** (2 * l) - 2 * u**l + 1, abs=TOL)


def test_b1_equals_the_thesis_sine_form():
    for i in range(21):
        x = i / 20
        thesis = 0.5 * math.sin(2 * x * math.pi - 0.5 * math.pi) + 0.5
        assert sh.f_b1(x) == pytest.approx(thesis, abs=TOL)


def test_bells_are_built_from_their_rising_curves_on_a_folded_input():
    for i in range(21):
        x = i / 20
        t = 1.0 - abs(2 * x - 1)
        assert sh.f_b2(x, 3.0) == pytest.approx(sh.f_q4(t, 3.0), abs=TOL)
        assert sh.f_b3(x, 3.0) == pytest.approx(sh.f_s3(t, 3.0), abs=TOL)
        assert sh.f_b4(x, 3.0) == pytest.approx(sh.f_s4(t, 3.0), abs=TOL)
        assert sh.f_b5(x) == pytest.approx(sh.f_s1(t), abs=TOL)
        assert sh.f_b6(x) == pytest.approx(sh.f_s2(t), abs=TOL)


# --- end points and ranges --------------------------------------------------


@pytest.mark.parametrize("l", [0.5, 1.0, 2.0, 3.0, 8.0])
@pytest.mark.parametrize("name", list(EASINGS))
def test_easing_end_points_are_exact(name, l):
    at_zero, at_one = END_POINTS[name]
    assert call(name, 0.0, l) == at_zero
    assert call(name, 1.0, l) == at_one


@pytest.mark.parametrize("l", [0.5, 1.0, 2.0, 3.0, 8.0])
@pytest.mark.parametrize("name", BELLS)
def test_bells_peak_at_one_half(name, l):
    assert call(name, 0.5, l) == pytest.approx(1.0, abs=TOL)


@pytest.mark.parametrize("name", list(EASINGS))
@PROPERTY
@given(x=unit, l=power)
def test_easing_output_stays_in_unit_interval_on_the_domain(name, x, l):
    assert 0.0 <= call(name, x, l) <= 1.0


@pytest.mark.parametrize("name", list(EASINGS))
@PROPERTY
@given(x=any_x, l=power)
def test_easing_clamps_inputs_outside_the_domain(name, x, l):
    y = call(name, x, l)
    assert not math.isnan(y)
    assert 0.0 <= y <= 1.0
    assert y == call(name, min(max(x, 0.0), 1.0), l)


@pytest.mark.parametrize("name", list(EASINGS))
def test_easing_never_returns_nan_for_negative_input_and_fractional_power(name):
    assert call(name, -0.3, 2.5) == END_POINTS[name][0]
    assert call(name, 1.7, 2.5) == END_POINTS[name][1]


# --- monotonicity and symmetry ---------------------------------------------


@pytest.mark.parametrize("name", INCREASING)
@PROPERTY
@given(a=unit, b=unit, l=power)
def test_rising_curves_are_nondecreasing(name, a, b, l):
    lo, hi = min(a, b), max(a, b)
    assert call(name, lo, l) <= call(name, hi, l) + TOL


@pytest.mark.parametrize("name", DECREASING)
@PROPERTY
@given(a=unit, b=unit, l=power)
def test_falling_curves_are_nonincreasing(name, a, b, l):
    lo, hi = min(a, b), max(a, b)
    assert call(name, lo, l) >= call(name, hi, l) - TOL


@pytest.mark.parametrize("name", BELLS)
@PROPERTY
@given(a=unit, b=unit, l=power)
def test_bells_rise_on_the_first_half_and_fall_on_the_second(name, a, b, l):
    lo, hi = 0.5 * min(a, b), 0.5 * max(a, b)
    assert call(name, lo, l) <= call(name, hi, l) + TOL
    lo, hi = 0.5 + lo, 0.5 + hi
    assert call(name, lo, l) >= call(name, hi, l) - TOL


@pytest.mark.parametrize("name", BELLS)
@PROPERTY
@given(x=unit, l=lipschitz_power)
def test_bells_are_symmetric_about_one_half(name, x, l):
    assert call(name, x, l) == pytest.approx(call(name, 1.0 - x, l), abs=1e-9)


@PROPERTY
@given(x=unit, l=lipschitz_power)
def test_s3_is_point_symmetric_about_the_centre(x, l):
    assert sh.f_s3(x, l) + sh.f_s3(1.0 - x, l) == pytest.approx(1.0, abs=1e-9)


# --- dispatch ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(EASINGS))
@PROPERTY
@given(x=any_x, l=power)
def test_ease_by_code_equals_the_direct_call(name, x, l):
    assert sh.ease(sh.easing_code(name), x, l) == call(name, x, l)


@pytest.mark.parametrize("code", [-1, 15, 100])
def test_ease_rejects_unknown_codes(code):
    with pytest.raises(ValueError):
        sh.ease(code, 0.5, 2.0)


def test_shaping_functions_are_callable_from_a_jitted_kernel():
    @numba.njit
    def kernel(code, x, l):
        return sh.ease(code, x, l) + sh.observability(5.0, 0.0, 10.0, math.pi, 2.0, 2.0)

    assert kernel(0, 0.5, 2.0) == pytest.approx(0.25 + 3.0)


def test_integer_arguments_from_python_give_float_results():
    y = sh.f_q1(1, 2)
    assert isinstance(y, float)
    assert y == 1.0


# --- range remapping (eq. 6.8) ---------------------------------------------


def test_clamp01_limits_to_the_unit_interval():
    assert sh.clamp01(-2.0) == 0.0
    assert sh.clamp01(0.3) == 0.3
    assert sh.clamp01(7.0) == 1.0


def test_remap_input_normalises_and_clamps():
    assert sh.remap_input(5.0, 0.0, 10.0) == 0.5
    assert sh.remap_input(0.375, 0.25, 0.75) == 0.25
    assert sh.remap_input(-1.0, 0.0, 10.0) == 0.0
    assert sh.remap_input(11.0, 0.0, 10.0) == 1.0


def test_remap_input_with_a_reversed_window_flips_direction():
    assert sh.remap_input(0.25, 1.0, 0.0) == 0.75


def test_remap_input_with_an_empty_window_is_a_step():
    assert sh.remap_input(0.49, 0.5, 0.5) == 0.0
    assert sh.remap_input(0.5, 0.5, 0.5) == 1.0
    assert sh.remap_input(0.51, 0.5, 0.5) == 1.0


def test_remap_output_scales_the_unit_interval_onto_the_target():
    assert sh.remap_output(0.0, 0.25, 0.75) == 0.25
    assert sh.remap_output(1.0, 0.25, 0.75) == 0.75
    assert sh.remap_output(0.5, -2.0, 2.0) == 0.0


def test_remap_of_q1_input_window_matches_figure_6_21():
    q1 = sh.EASING_CODES["q1"]
    assert sh.remap(q1, 0.5, 2.0, 0.25, 0.75, 0.0, 1.0) == pytest.approx(0.25)
    assert sh.remap(q1, 0.2, 2.0, 0.25, 0.75, 0.0, 1.0) == 0.0
    assert sh.remap(q1, 0.8, 2.0, 0.25, 0.75, 0.0, 1.0) == 1.0


def test_remap_of_s3_output_window_matches_figure_6_22():
    s3 = sh.EASING_CODES["s3"]
    # f_s3(0.25, 2) = 0.125, then 0.125 * (0.75 - 0.25) + 0.25
    assert sh.remap(s3, 0.25, 2.0, 0.0, 1.0, 0.25, 0.75) == pytest.approx(0.3125)


def test_remap_of_b3_both_windows_matches_figure_6_23():
    b3 = sh.EASING_CODES["b3"]
    # input 0.375 -> 0.25 in the window; f_b3(0.25, 2) = 0.5; output 0.5 -> 0.5
    assert sh.remap(b3, 0.375, 2.0, 0.25, 0.75, 0.25, 0.75) == pytest.approx(0.5)
    # outside the input window the bell is at its end value, i.e. y_min
    assert sh.remap(b3, 0.1, 2.0, 0.25, 0.75, 0.25, 0.75) == 0.25


def test_remap_to_a_general_range():
    q1 = sh.EASING_CODES["q1"]
    # (5 - 0) / 10 = 0.5 -> 0.25 -> 0.25 * (3 - -1) + -1 = 0
    assert sh.remap(q1, 5.0, 2.0, 0.0, 10.0, -1.0, 3.0) == pytest.approx(0.0)


@pytest.mark.parametrize("name", list(EASINGS))
@PROPERTY
@given(x=any_x, l=power)
def test_remap_with_identity_windows_equals_ease(name, x, l):
    code = sh.easing_code(name)
    assert sh.remap(code, x, l, 0.0, 1.0, 0.0, 1.0) == sh.ease(code, x, l)


# --- distance observability f_ip -------------------------------------------


def test_f_ip_matches_hand_computed_values():
    assert sh.f_ip(0.5, 2.0) == pytest.approx(3.0)
    assert sh.f_ip(0.5, 1.0) == pytest.approx(1.0)
    assert sh.f_ip(0.25, 3.0) == pytest.approx(63.0)


def test_f_ip_is_zero_at_the_vision_radius_and_beyond():
    assert sh.f_ip(1.0, 2.0) == 0.0
    assert sh.f_ip(3.0, 2.0) == 0.0


@pytest.mark.parametrize("x", [0.0, -1.0, 1e-9])
def test_f_ip_is_large_but_finite_for_coincident_animals(x):
    y = sh.f_ip(x, 2.0)
    assert math.isfinite(y)
    assert y == pytest.approx(sh.EPSILON**-2.0 - 1.0)


@PROPERTY
@given(a=unit, b=unit, l=power)
def test_f_ip_is_nonincreasing_and_nonnegative(a, b, l):
    lo, hi = min(a, b), max(a, b)
    assert sh.f_ip(hi, l) >= 0.0
    assert sh.f_ip(lo, l) >= sh.f_ip(hi, l) * (1 - 1e-12)


# --- separation activation f_sep -------------------------------------------


def test_f_sep_matches_hand_computed_values():
    assert sh.f_sep(100.0, 0.01, 2.0) == pytest.approx(0.75)
    assert sh.f_sep(1.0, 1.0, 1.0) == pytest.approx(0.5)


def test_f_sep_is_zero_at_zero_and_for_negative_input():
    assert sh.f_sep(0.0, 0.01, 2.0) == 0.0
    assert sh.f_sep(-5.0, 0.01, 2.0) == 0.0


def test_f_sep_approaches_one_for_large_input():
    assert sh.f_sep(1e9, 0.01, 2.0) == pytest.approx(1.0, abs=1e-9)
    assert sh.f_sep(math.inf, 0.01, 2.0) == 1.0


@PROPERTY
@given(
    a=st.floats(min_value=0.0, max_value=1e6),
    b=st.floats(min_value=0.0, max_value=1e6),
    k=st.floats(min_value=1e-3, max_value=10.0),
    l=power,
)
def test_f_sep_is_nondecreasing_and_below_one(a, b, k, l):
    lo, hi = min(a, b), max(a, b)
    assert 0.0 <= sh.f_sep(lo, k, l) <= sh.f_sep(hi, k, l) + TOL
    assert sh.f_sep(hi, k, l) <= 1.0


# --- combined observability o(d, alpha) ------------------------------------


def test_observability_matches_hand_computed_product():
    # f_ip(5 / 10, 2) = 3 and f_q2(2 (pi/4) / pi, 2) = 1 - 0.25
    assert sh.observability(5.0, math.pi / 4, 10.0, math.pi, 2.0, 2.0) == pytest.approx(2.25)


def test_observability_is_the_distance_weight_straight_ahead():
    assert sh.observability(2.0, 0.0, 8.0, math.pi, 3.0, 2.0) == pytest.approx(63.0)


def test_observability_is_zero_at_the_edge_of_vision():
    assert sh.observability(10.0, 0.0, 10.0, math.pi, 2.0, 2.0) == 0.0


def test_observability_is_zero_beyond_the_vision_radius():
    assert sh.observability(25.0, 0.0, 10.0, math.pi, 2.0, 2.0) == 0.0


def test_observability_is_zero_at_the_edge_of_the_field_of_view():
    assert sh.observability(5.0, math.pi / 2, 10.0, math.pi, 2.0, 2.0) == 0.0


def test_observability_is_zero_beyond_the_field_of_view():
    assert sh.observability(5.0, 2.0, 10.0, math.pi, 2.0, 2.0) == 0.0
    assert sh.observability(5.0, math.pi, 10.0, 1.5 * math.pi, 2.0, 2.0) == 0.0


def test_observability_is_zero_straight_behind_with_full_circle_vision():
    assert sh.observability(5.0, math.pi, 10.0, 2 * math.pi, 2.0, 2.0) == 0.0
    assert sh.observability(5.0, 0.99 * math.pi, 10.0, 2 * math.pi, 2.0, 2.0) > 0.0


def test_observability_ignores_the_sign_of_the_angle():
    left = sh.observability(4.0, 0.3, 10.0, math.pi, 2.0, 2.0)
    right = sh.observability(4.0, -0.3, 10.0, math.pi, 2.0, 2.0)
    assert left == right > 0.0


def test_observability_is_finite_for_coincident_animals():
    assert math.isfinite(sh.observability(0.0, 0.0, 10.0, math.pi, 2.0, 2.0))


def test_observability_is_zero_for_a_degenerate_radius_or_field_of_view():
    assert sh.observability(0.0, 0.0, 0.0, math.pi, 2.0, 2.0) == 0.0
    assert sh.observability(1.0, 0.0, 10.0, 0.0, 2.0, 2.0) == 0.0


@PROPERTY
@given(
    d=st.floats(min_value=0.0, max_value=20.0),
    alpha=st.floats(min_value=0.0, max_value=math.pi),
    fov=st.floats(min_value=0.1, max_value=2 * math.pi),
    ld=power,
    la=power,
)
def test_observability_is_the_product_of_its_factors_inside_vision(d, alpha, fov, ld, la):
    o = sh.observability(d, alpha, 10.0, fov, ld, la)
    assert o >= 0.0
    assert math.isfinite(o)
    if d >= 10.0 or 2 * alpha >= fov:
        assert o == 0.0
    else:
        expected = sh.f_ip(d / 10.0, ld) * sh.f_q2(2 * alpha / fov, la)
        assert o == pytest.approx(expected, rel=1e-12, abs=1e-300)


@PROPERTY
@given(
    d1=st.floats(min_value=0.0, max_value=10.0),
    d2=st.floats(min_value=0.0, max_value=10.0),
    a1=st.floats(min_value=0.0, max_value=math.pi),
    a2=st.floats(min_value=0.0, max_value=math.pi),
)
def test_observability_prefers_closer_and_more_frontal_neighbours(d1, d2, a1, a2):
    near, far = min(d1, d2), max(d1, d2)
    front, side = min(a1, a2), max(a1, a2)
    o = sh.observability
    assert o(near, front, 10.0, 2 * math.pi, 2.0, 2.0) >= o(far, front, 10.0, 2 * math.pi, 2.0, 2.0) * (
        1 - 1e-12
    )
    assert o(near, front, 10.0, 2 * math.pi, 2.0, 2.0) >= o(near, side, 10.0, 2 * math.pi, 2.0, 2.0) * (
        1 - 1e-12
    )


def test_the_power_shortcuts_are_correctly_rounded():
    # x ** 2, x ** 1 and x ** 0.5 skip the library call (x * x, x, sqrt(x)): each result is
    # the exact power rounded once, which a correctly rounded pow would also give
    from decimal import Decimal, getcontext
    from fractions import Fraction

    from starling.steering.shaping import _pow

    getcontext().prec = 60
    rng = np.random.default_rng(21)
    xs = np.concatenate([rng.random(5_000), rng.random(500) * 1e6, [0.0, 1.0, 0.25, 2.0, 1e-300, 5e-324]])
    for x in xs.tolist():
        assert _pow(x, 2.0) == float(Fraction(x) ** 2), x
        assert _pow(x, 1.0) == x
        assert _pow(x, 0.5) == float(Decimal(x).sqrt()), x
    assert _pow(0.25, 0.5) == 0.5 and _pow(3.0, 2.0) == 9.0
    assert _pow(0.25, 1.5) == 0.125 and _pow(8.0, 1.0 / 3.0) == 8.0 ** (1.0 / 3.0)  # other powers: the library's
