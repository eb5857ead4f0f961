"""Families on integers: arithmetic, comparisons and conditions."""

from __future__ import annotations

import random

from autojudge.tasks.pyfunc_generator.problem import Draft
from autojudge.tasks.pyfunc_generator.wording import INDENT, Style

INT_PARAMS = ("x", "n", "num", "value", "k", "z", "amount", "size", "number", "w")
PAIR_PARAMS = (
    ("a", "b"),
    ("x", "y"),
    ("m", "n"),
    ("first", "second"),
    ("p", "q"),
    ("i", "j"),
    ("left", "right"),
    ("u", "w"),
    ("x1", "x2"),
    ("lo", "hi"),
)
LABELS = ("big", "small", "yes", "no", "high", "low", "hot", "cold", "ok", "bad")

# ---- integer arithmetic -------------------------------------------------------------------------


def add_constant(rng: random.Random, style: Style) -> Draft:
    (x,) = params = (rng.choice(INT_PARAMS),)
    k = rng.randint(2, 20)
    if rng.random() < 0.5:
        name, text, expression, reference = "add_k", f"Return {x} plus {k}.", style.commute(x, str(k), "+"), k
    else:
        name, text, expression, reference = "sub_k", f"Return {x} minus {k}.", f"{x} - {k}", -k
    name = rng.choice(
        {"add_k": ("add_const", "plus_k", "increase"), "sub_k": ("sub_const", "minus_k", "decrease")}[name]
    )
    cases = [(rng.randint(-20, 40),) for _ in range(rng.randint(3, 5))]
    return Draft(text, name, params, lambda v: v + reference, cases, style.returning(expression))


def affine(rng: random.Random, style: Style) -> Draft:
    (x,) = params = (rng.choice(INT_PARAMS),)
    a, b = rng.randint(2, 9), rng.randint(1, 20)
    product = style.commute(str(a), x, "*")
    expression = style.commute(product, str(b), "+")
    cases = [(rng.randint(-10, 15),) for _ in range(rng.randint(3, 5))]
    text = f"Return {a} times {x} plus {b}."
    name = rng.choice(("affine", "scale_shift", "linear"))
    return Draft(text, name, params, lambda v: a * v + b, cases, style.returning(expression))


def two_numbers(rng: random.Random, style: Style) -> Draft:
    a, b = params = rng.choice(PAIR_PARAMS)
    op = rng.choice(["+", "*", "-"])
    text = {
        "+": f"Return the sum of {a} and {b}.",
        "*": f"Return the product of {a} and {b}.",
        "-": f"Return {a} minus {b}.",
    }[op]
    name = rng.choice(
        {"+": ("add", "add_two"), "*": ("multiply", "times"), "-": ("subtract", "difference")}[op]
    )
    expression = f"{a} - {b}" if op == "-" else style.commute(a, b, op)
    reference = {"+": lambda p, q: p + q, "*": lambda p, q: p * q, "-": lambda p, q: p - q}[op]
    cases = [(rng.randint(-12, 12), rng.randint(-12, 12)) for _ in range(rng.randint(3, 5))]
    return Draft(text, name, params, reference, cases, style.returning(expression))


def absolute_difference(rng: random.Random, style: Style) -> Draft:
    a, b = params = rng.choice(PAIR_PARAMS)
    expression = style.pick([f"abs({a} - {b})", f"abs({b} - {a})", f"max({a}, {b}) - min({a}, {b})"])
    cases = [(rng.randint(-15, 15), rng.randint(-15, 15)) for _ in range(rng.randint(3, 5))]
    text = f"Return the absolute difference between {a} and {b}."
    return Draft(
        text,
        rng.choice(("abs_diff", "distance", "gap", "absolute_gap", "diff_abs")),
        params,
        lambda p, q: abs(p - q),
        cases,
        style.returning(expression),
    )


# ---- comparisons and conditions -----------------------------------------------------------------


def larger_or_smaller(rng: random.Random, style: Style) -> Draft:
    a, b = params = rng.choice(PAIR_PARAMS)
    larger = rng.random() < 0.5
    builtin, op = ("max", ">") if larger else ("min", "<")
    text = f"Return the {'larger' if larger else 'smaller'} of {a} and {b}."
    form = rng.randrange(3)
    if form == 0:
        body = style.returning(f"{builtin}({', '.join(style.order(a, b))})")
    elif form == 1:
        body = style.returning(f"{a} if {a} {op} {b} else {b}")
    else:
        body = [f"if {a} {op} {b}:", f"{INDENT}return {a}", f"return {b}"]
    name = rng.choice(("larger", "bigger", "max_of_two") if larger else ("smaller", "lesser", "min_of_two"))
    cases = [(rng.randint(-10, 10), rng.randint(-10, 10)) for _ in range(rng.randint(3, 5))]
    return Draft(text, name, params, max if larger else min, cases, body)


def clamp(rng: random.Random, style: Style) -> Draft:
    (x,) = params = (rng.choice(INT_PARAMS),)
    low = rng.randint(-5, 5)
    high = low + rng.randint(3, 12)
    form = rng.randrange(3)
    if form == 0:
        body = style.returning(f"max({low}, min({x}, {high}))")
    elif form == 1:
        body = style.returning(f"min(max({x}, {low}), {high})")
    else:
        body = [
            f"if {x} < {low}:",
            f"{INDENT}return {low}",
            f"if {x} > {high}:",
            f"{INDENT}return {high}",
            f"return {x}",
        ]
    cases = [(low - rng.randint(1, 5),), (high + rng.randint(1, 5),), (low + 1,), (high - 1,)]
    rng.shuffle(cases)
    cases += [(rng.randint(low - 5, high + 5),) for _ in range(rng.randint(0, 1))]
    text = f"Return {x} limited to the range from {low} to {high}."
    return Draft(
        text, rng.choice(("clamp", "limit", "bound")), params, lambda v: max(low, min(v, high)), cases, body
    )


def threshold_label(rng: random.Random, style: Style) -> Draft:
    (x,) = params = (rng.choice(INT_PARAMS),)
    k = rng.randint(-5, 20)
    above, below = rng.sample(LABELS, 2)
    op, word = rng.choice([(">", "greater than"), ("<", "less than"), (">=", "at least")])
    test = f"{x} {op} {k}"
    form = rng.randrange(3)
    if form == 0:
        body = style.returning(f"{above!r} if {test} else {below!r}")
    elif form == 1:
        body = [f"if {test}:", f"{INDENT}return {above!r}", f"return {below!r}"]
    else:
        body = [f"if {test}:", f"{INDENT}return {above!r}", "else:", f"{INDENT}return {below!r}"]
    compare = {">": lambda v: v > k, "<": lambda v: v < k, ">=": lambda v: v >= k}[op]
    cases = [(k,), (k + 1,), (k - 1,)] + [(rng.randint(k - 10, k + 10),) for _ in range(rng.randint(0, 2))]
    rng.shuffle(cases)
    text = f"Return {above!r} if {x} is {word} {k}, otherwise {below!r}."
    name = rng.choice(("label", "classify", "describe"))
    return Draft(text, name, params, lambda v: above if compare(v) else below, cases, body)


def divisible(rng: random.Random, style: Style) -> Draft:
    (x,) = params = (rng.choice(INT_PARAMS),)
    k = rng.randint(2, 9)
    test = style.commute(f"{x} % {k}", "0", "==")
    if rng.random() < 0.6:
        body = style.returning(test)
    else:
        body = [f"if {test}:", f"{INDENT}return True", "return False"]
    cases = [(k * rng.randint(-3, 6),), (k * rng.randint(-3, 6) + rng.randint(1, k - 1),)]
    cases += [(rng.randint(-30, 60),) for _ in range(rng.randint(1, 3))]
    text = f"Return True if {x} is divisible by {k}, otherwise False."
    return Draft(
        text,
        rng.choice(("divisible", f"is_multiple_of_{k}", "divides")),
        params,
        lambda v: v % k == 0,
        cases,
        body,
    )


def in_range(rng: random.Random, style: Style) -> Draft:
    (x,) = params = (rng.choice(INT_PARAMS),)
    low = rng.randint(-10, 10)
    high = low + rng.randint(2, 15)
    parts = [f"{x} >= {low}", f"{x} <= {high}"]
    expression = style.pick([f"{low} <= {x} <= {high}", style.commute(*parts, "and")])
    cases = [(low,), (high,), (low - 1,), (high + 1,), (rng.randint(low - 5, high + 5),)]
    cases = rng.sample(cases[:4], 4) + cases[4:] * rng.randint(0, 1)
    text = f"Return True if {x} is between {low} and {high} inclusive, otherwise False."
    return Draft(
        text,
        rng.choice(("in_range", "between", "within")),
        params,
        lambda v: low <= v <= high,
        cases,
        style.returning(expression),
    )
