"""Families on lists of integers: filters, maps, reductions, max/min, counting."""

from __future__ import annotations

import random
from collections.abc import Callable

from autojudge.tasks.pyfunc_generator.problem import Draft
from autojudge.tasks.pyfunc_generator.wording import (
    ACCUMULATOR_NAMES,
    COUNTER_NAMES,
    ELEMENT_NAMES,
    INDENT,
    Style,
    loop,
)

LIST_PARAMS = (
    "xs",
    "nums",
    "values",
    "numbers",
    "items",
    "arr",
    "data",
    "seq",
    "vals",
    "lst",
    "ints",
    "scores",
)


def _conditions(
    rng: random.Random, style: Style
) -> tuple[str, Callable[[str], str], Callable[[int], bool], int | None]:
    """A condition on one number: its description, its code for a variable name, its reference, its boundary."""
    kind = rng.choice(["even", "odd", "positive", "negative", "greater", "less", "divisible", "not_equal"])
    k = rng.randint(2, 9)
    if kind == "even":
        return "even", lambda v: style.commute(f"{v} % 2", "0", "=="), lambda x: x % 2 == 0, None
    if kind == "odd":
        return "odd", lambda v: style.commute(f"{v} % 2", "1", "=="), lambda x: x % 2 == 1, None
    if kind == "positive":
        return "positive", lambda v: f"{v} > 0", lambda x: x > 0, 0
    if kind == "negative":
        return "negative", lambda v: f"{v} < 0", lambda x: x < 0, 0
    if kind == "greater":
        return f"greater than {k}", lambda v: f"{v} > {k}", lambda x: x > k, k
    if kind == "less":
        return f"less than {k}", lambda v: f"{v} < {k}", lambda x: x < k, k
    if kind == "divisible":
        k = rng.randint(3, 5)
        return (
            f"divisible by {k}",
            lambda v: style.commute(f"{v} % {k}", "0", "=="),
            lambda x: x % k == 0,
            None,
        )
    return f"not equal to {k}", lambda v: style.commute(v, str(k), "!="), lambda x: x != k, k


def _int_list(rng: random.Random, low: int = -9, high: int = 12, size: tuple[int, int] = (0, 6)) -> list[int]:
    return [rng.randint(low, high) for _ in range(rng.randint(*size))]


def _list_cases(
    rng: random.Random, count: int, boundary: int | None = None, nonempty: bool = False
) -> list[tuple]:
    """Lists of small ints; ``boundary`` (a constant of the problem) and its neighbours show up in them."""
    cases = []
    for index in range(count):
        values = _int_list(rng, size=(1 if nonempty else 0, 6))
        if boundary is not None and index < 2:
            values += [boundary, boundary + 1 - 2 * index]
            rng.shuffle(values)
        cases.append((values,))
    return cases


def sum_filtered(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    described, condition, keep, boundary = _conditions(rng, style)
    v = style.name(ELEMENT_NAMES)
    form = rng.randrange(3)
    if form == 0:
        total = style.name(ACCUMULATOR_NAMES)
        add = style.pick([f"{total} += {v}", f"{total} = {style.commute(total, v, '+')}"])
        body = [f"{total} = 0", *loop(xs, v, [f"if {condition(v)}:", INDENT + add]), f"return {total}"]
    else:
        inner = f"{v} for {v} in {xs} if {condition(v)}"
        body = style.returning(f"sum({inner})" if form == 1 else f"sum([{inner}])")
    text = f"Return the sum of the numbers in {xs} that are {described}."
    name = rng.choice(("sum_if", "filtered_sum", "sum_matching"))
    reference = lambda values: sum(value for value in values if keep(value))  # noqa: E731
    return Draft(text, name, params, reference, _list_cases(rng, rng.randint(3, 5), boundary), body)


def count_filtered(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    described, condition, keep, boundary = _conditions(rng, style)
    v = style.name(ELEMENT_NAMES)
    form = rng.randrange(3)
    if form == 0:
        count = style.name(COUNTER_NAMES)
        body = [
            f"{count} = 0",
            *loop(xs, v, [f"if {condition(v)}:", f"{INDENT}{count} += 1"]),
            f"return {count}",
        ]
    elif form == 1:
        body = style.returning(f"sum(1 for {v} in {xs} if {condition(v)})")
    else:
        body = style.returning(f"len([{v} for {v} in {xs} if {condition(v)}])")
    text = f"Return how many numbers in {xs} are {described}."
    reference = lambda values: sum(1 for value in values if keep(value))  # noqa: E731
    return Draft(
        text,
        rng.choice(("count_if", "how_many", "count_matching")),
        params,
        reference,
        _list_cases(rng, rng.randint(3, 5), boundary),
        body,
    )


def filter_list(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    described, condition, keep, boundary = _conditions(rng, style)
    v = style.name(ELEMENT_NAMES)
    if rng.random() < 0.5:
        body = style.returning(f"[{v} for {v} in {xs} if {condition(v)}]")
    else:
        out = style.name(ACCUMULATOR_NAMES)
        body = [
            f"{out} = []",
            *loop(xs, v, [f"if {condition(v)}:", f"{INDENT}{out}.append({v})"]),
            f"return {out}",
        ]
    text = f"Return the numbers in {xs} that are {described}, in order."
    reference = lambda values: [value for value in values if keep(value)]  # noqa: E731
    return Draft(
        text,
        rng.choice(("keep_if", "select", "filter_numbers")),
        params,
        reference,
        _list_cases(rng, rng.randint(3, 5), boundary),
        body,
    )


def map_list(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    v = style.name(ELEMENT_NAMES)
    kind, k = rng.choice(["times", "plus", "square"]), rng.randint(2, 9)
    if kind == "times":
        described, expression, reference = (
            f"multiplied by {k}",
            style.commute(v, str(k), "*"),
            lambda z: z * k,
        )
    elif kind == "plus":
        described, expression, reference = f"increased by {k}", style.commute(v, str(k), "+"), lambda z: z + k
    else:
        described, expression, reference = "squared", style.pick([f"{v} * {v}", f"{v} ** 2"]), lambda z: z * z
    if rng.random() < 0.5:
        body = style.returning(f"[{expression} for {v} in {xs}]")
    else:
        out = style.name(ACCUMULATOR_NAMES)
        body = [f"{out} = []", *loop(xs, v, [f"{out}.append({expression})"]), f"return {out}"]
    text = f"Return a list of the numbers in {xs}, each {described}."
    mapped = lambda values: [reference(value) for value in values]  # noqa: E731
    return Draft(
        text,
        rng.choice(("transform", "map_all", "apply_each")),
        params,
        mapped,
        _list_cases(rng, rng.randint(3, 5)),
        body,
    )


def product(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    v, out = style.name(ELEMENT_NAMES), style.name(ACCUMULATOR_NAMES)
    update = style.pick([f"{out} *= {v}", f"{out} = {style.commute(out, v, '*')}"])
    body = [f"{out} = 1", *loop(xs, v, [update]), f"return {out}"]
    text = f"Return the product of the numbers in {xs} (1 for an empty list)."

    def reference(values: list[int]) -> int:
        result = 1
        for value in values:
            result *= value
        return result

    cases = [([rng.randint(-4, 6) for _ in range(rng.randint(0, 4))],) for _ in range(rng.randint(3, 5))]
    return Draft(
        text,
        rng.choice(("product", "multiply_all", "prod", "product_of", "mul_all")),
        params,
        reference,
        cases,
        body,
    )


def sum_of_squares(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    v = style.name(ELEMENT_NAMES)
    square = style.pick([f"{v} * {v}", f"{v} ** 2"])
    if rng.random() < 0.5:
        body = style.returning(f"sum({square} for {v} in {xs})")
    else:
        total = style.name(ACCUMULATOR_NAMES)
        body = [f"{total} = 0", *loop(xs, v, [f"{total} += {square}"]), f"return {total}"]
    text = f"Return the sum of the squares of the numbers in {xs}."
    reference = lambda values: sum(value * value for value in values)  # noqa: E731
    return Draft(
        text,
        rng.choice(("sum_squares", "square_sum", "squares_total", "sum_sq", "sumsq")),
        params,
        reference,
        _list_cases(rng, rng.randint(3, 5)),
        body,
    )


def count_value(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    k = rng.randint(0, 6)
    v = style.name(ELEMENT_NAMES)
    form = rng.randrange(3)
    if form == 0:
        body = style.returning(f"{xs}.count({k})")
    elif form == 1:
        body = style.returning(f"sum(1 for {v} in {xs} if {style.commute(v, str(k), '==')})")
    else:
        count = style.name(COUNTER_NAMES)
        body = [
            f"{count} = 0",
            *loop(xs, v, [f"if {style.commute(v, str(k), '==')}:", f"{INDENT}{count} += 1"]),
            f"return {count}",
        ]
    cases = [
        ([rng.choice([k, k, k + 1, rng.randint(0, 6)]) for _ in range(rng.randint(0, 6))],)
        for _ in range(rng.randint(3, 5))
    ]
    text = f"Return how many times {k} appears in {xs}."
    return Draft(
        text,
        rng.choice(("count_value", f"count_{k}s", "occurrences")),
        params,
        lambda values: values.count(k),
        cases,
        body,
    )


def extreme(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    largest = rng.random() < 0.5
    builtin, op, index = ("max", ">", -1) if largest else ("min", "<", 0)
    form = rng.randrange(3)
    if form == 0:
        body = style.returning(f"{builtin}({xs})")
    elif form == 1:
        body = style.returning(f"sorted({xs})[{index}]")
    else:
        best, v = style.name(("best", "top", "result", "answer")), style.name(ELEMENT_NAMES)
        body = [
            f"{best} = {xs}[0]",
            *loop(xs, v, [f"if {v} {op} {best}:", f"{INDENT}{best} = {v}"]),
            f"return {best}",
        ]
    text = f"Return the {'largest' if largest else 'smallest'} number in {xs} (a non-empty list)."
    name = rng.choice(("largest", "biggest", "maximum") if largest else ("smallest", "lowest", "minimum"))
    return Draft(
        text, name, params, max if largest else min, _list_cases(rng, rng.randint(3, 5), nonempty=True), body
    )


def first_plus_last(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    op, word = rng.choice([("+", "plus"), ("*", "times")])
    body = style.returning(style.commute(f"{xs}[0]", f"{xs}[-1]", op))
    reference = (
        (lambda values: values[0] + values[-1]) if op == "+" else (lambda values: values[0] * values[-1])
    )
    text = f"Return the first number in {xs} {word} the last one (a non-empty list)."
    return Draft(
        text,
        rng.choice(("ends", "first_and_last", "edge_combine")),
        params,
        reference,
        _list_cases(rng, rng.randint(3, 5), nonempty=True),
        body,
    )
