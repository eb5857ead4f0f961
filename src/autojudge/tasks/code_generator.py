"""Seeded generator of the toy "pyfunc" problems: tiny function-synthesis tasks with assert tests.

A problem is a one-line description and a signature, e.g. ``Return the sum of the even numbers
in xs.`` / ``def sum_even(xs):``, 3 to 5 ``assert`` tests and a canonical solution: the body that
continues the signature. 24 families (integer arithmetic, comparisons and conditions, list
filters, maps and reductions, max/min, counting, string operations) draw their constants,
operators, names and test inputs at random, so problems differ.

The solution's wording is drawn from a second random stream, independently of the problem:
loop and accumulator names, the order of operands of commutative operators, an intermediate
variable or a direct return, an optional comment line, a ``for`` loop or a comprehension or a
builtin where they are equivalent. A model's wording is then a coin flip, while its operators,
constants, comparisons and conditions decide whether the tests pass. Solutions stay short (a tiny
model must learn them): a few lines, well under 60 tokens.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

INDENT = "    "
# Parameter names are many, so that every family has hundreds of prompts: the held-out splits take
# distinct prompts, and a family of a few dozen would lose most of them to the held-out splits.
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
STRING_PARAMS = ("s", "text", "word", "line", "name", "phrase", "sentence", "string", "txt")
ELEMENT_NAMES = ("x", "n", "v", "item", "value", "num")
ACCUMULATOR_NAMES = ("total", "result", "acc", "out", "answer")
COUNTER_NAMES = ("count", "total", "result", "counter")
RESULT_NAMES = ("result", "answer", "out", "res")
CHAR_NAMES = ("ch", "c", "letter", "char")
COMMENTS = ("# compute the result", "# solution", "# straightforward", "# done in one pass")
WORDS = ("apple", "banana", "cherry", "kiwi", "mango", "hello", "level", "python", "data", "code", "ab", "")
SENTENCES = ("hello world", "a b c", "one", "", "the quick brown fox", "to be or not", "x  y")
LABELS = ("big", "small", "yes", "no", "high", "low", "hot", "cold", "ok", "bad")
SUFFIXES = ("!", "ing", "_x", "ed", "?", "s")


@dataclass(frozen=True)
class CodeProblem:
    """A generated problem: description, signature, assert tests and canonical solution body."""

    id: str
    family: str
    description: str
    entry_point: str
    params: tuple[str, ...]
    tests: tuple[str, ...]
    solution: str  # continues the signature line: "\n    ...body..."

    @property
    def signature(self) -> str:
        return f"def {self.entry_point}({', '.join(self.params)}):"

    @property
    def prompt(self) -> str:
        return f"{self.description}\n{self.signature}"

    @property
    def program(self) -> str:
        return self.signature + self.solution


@dataclass(frozen=True)
class Draft:
    """What a family draws: the problem's text, its reference function, inputs and solution lines."""

    description: str
    entry_point: str
    params: tuple[str, ...]
    reference: Callable[..., object]
    cases: list[tuple]
    body: list[str]


class Style:
    """Lexical choices, drawn from their own random stream: names, operand orders, forms."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.taken: set[str] = set()

    def name(self, choices: Sequence[str]) -> str:
        """A variable name not used yet in this solution (the name lists never overlap parameter names)."""
        name = self.rng.choice([c for c in choices if c not in self.taken])
        self.taken.add(name)
        return name

    def pick(self, options: Sequence[str]) -> str:
        return self.rng.choice(list(options))

    def order(self, left: str, right: str) -> tuple[str, str]:
        """The two operands of a commutative operation, in either order."""
        return (left, right) if self.rng.random() < 0.5 else (right, left)

    def commute(self, left: str, right: str, op: str) -> str:
        """``left op right`` or ``right op left`` for a commutative operator."""
        first, second = self.order(left, right)
        return f"{first} {op} {second}"

    def returning(self, expression: str) -> list[str]:
        """``return expression``, or through an intermediate variable."""
        if self.rng.random() < 0.5:
            return [f"return {expression}"]
        name = self.name(RESULT_NAMES)
        return [f"{name} = {expression}", f"return {name}"]


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


def _loop(lst: str, element: str, inner: list[str]) -> list[str]:
    return [f"for {element} in {lst}:", *[INDENT + line for line in inner]]


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


# ---- lists: filters, maps, reductions -----------------------------------------------------------


def sum_filtered(rng: random.Random, style: Style) -> Draft:
    (xs,) = params = (rng.choice(LIST_PARAMS),)
    described, condition, keep, boundary = _conditions(rng, style)
    v = style.name(ELEMENT_NAMES)
    form = rng.randrange(3)
    if form == 0:
        total = style.name(ACCUMULATOR_NAMES)
        add = style.pick([f"{total} += {v}", f"{total} = {style.commute(total, v, '+')}"])
        body = [f"{total} = 0", *_loop(xs, v, [f"if {condition(v)}:", INDENT + add]), f"return {total}"]
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
            *_loop(xs, v, [f"if {condition(v)}:", f"{INDENT}{count} += 1"]),
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
            *_loop(xs, v, [f"if {condition(v)}:", f"{INDENT}{out}.append({v})"]),
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
        body = [f"{out} = []", *_loop(xs, v, [f"{out}.append({expression})"]), f"return {out}"]
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
    body = [f"{out} = 1", *_loop(xs, v, [update]), f"return {out}"]
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
        body = [f"{total} = 0", *_loop(xs, v, [f"{total} += {square}"]), f"return {total}"]
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
            *_loop(xs, v, [f"if {style.commute(v, str(k), '==')}:", f"{INDENT}{count} += 1"]),
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
            *_loop(xs, v, [f"if {v} {op} {best}:", f"{INDENT}{best} = {v}"]),
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


# ---- strings ------------------------------------------------------------------------------------


def repeat_string(rng: random.Random, style: Style) -> Draft:
    (s,) = params = (rng.choice(STRING_PARAMS),)
    k = rng.randint(2, 4)
    body = style.returning(style.commute(s, str(k), "*"))
    cases = [(word,) for word in rng.sample(WORDS, rng.randint(3, 5))]
    text = f"Return {s} repeated {k} times."
    return Draft(text, rng.choice(("repeat", f"times_{k}", "echo")), params, lambda w: w * k, cases, body)


def affix(rng: random.Random, style: Style) -> Draft:
    (s,) = params = (rng.choice(STRING_PARAMS),)
    piece = rng.choice(SUFFIXES)
    after = rng.random() < 0.5
    expression = f"{s} + {piece!r}" if after else f"{piece!r} + {s}"
    text = f"Return {s} followed by {piece!r}." if after else f"Return {piece!r} followed by {s}."
    cases = [(word,) for word in rng.sample(WORDS, rng.randint(3, 5))]
    reference = (lambda w: w + piece) if after else (lambda w: piece + w)
    name = rng.choice(("add_suffix", "append_text") if after else ("add_prefix", "prepend_text"))
    return Draft(text, name, params, reference, cases, style.returning(expression))


def count_char(rng: random.Random, style: Style) -> Draft:
    (s,) = params = (rng.choice(STRING_PARAMS),)
    cases = [(word,) for word in rng.sample(WORDS + SENTENCES, rng.randint(3, 5))]
    char = rng.choice(sorted({c for (word,) in cases for c in word if c.isalpha()}) or ["a"])
    ch = style.name(CHAR_NAMES)
    form = rng.randrange(3)
    if form == 0:
        body = style.returning(f"{s}.count({char!r})")
    elif form == 1:
        body = style.returning(f"sum(1 for {ch} in {s} if {style.commute(ch, repr(char), '==')})")
    else:
        count = style.name(COUNTER_NAMES)
        inner = [f"if {style.commute(ch, repr(char), '==')}:", f"{INDENT}{count} += 1"]
        body = [f"{count} = 0", *_loop(s, ch, inner), f"return {count}"]
    text = f"Return how many times the letter {char!r} appears in {s}."
    return Draft(
        text,
        rng.choice(("count_letter", f"count_{char}", "letter_count")),
        params,
        lambda w: w.count(char),
        cases,
        body,
    )


def reverse_string(rng: random.Random, style: Style) -> Draft:
    (s,) = params = (rng.choice(STRING_PARAMS),)
    body = style.returning(style.pick([f"{s}[::-1]", f"''.join(reversed({s}))"]))
    cases = [(word,) for word in rng.sample(WORDS, rng.randint(3, 5))]
    return Draft(
        f"Return {s} reversed.",
        rng.choice(("reverse", "backwards", "flip", "reversed_text", "mirror")),
        params,
        lambda w: w[::-1],
        cases,
        body,
    )


def word_count(rng: random.Random, style: Style) -> Draft:
    (s,) = params = (rng.choice(STRING_PARAMS),)
    if rng.random() < 0.5:
        body = style.returning(f"len({s}.split())")
    else:
        words = style.name(("words", "parts", "tokens"))
        body = [f"{words} = {s}.split()", f"return len({words})"]
    cases = [(sentence,) for sentence in rng.sample(SENTENCES, rng.randint(3, 5))]
    text = f"Return the number of words in {s} (separated by spaces)."
    return Draft(
        text,
        rng.choice(("word_count", "count_words", "num_words", "words_in", "how_many_words")),
        params,
        lambda w: len(w.split()),
        cases,
        body,
    )


def starts_or_ends(rng: random.Random, style: Style) -> Draft:
    (s,) = params = (rng.choice(STRING_PARAMS),)
    piece = rng.choice(("a", "b", "c", "he", "py", "ap", "ng", "o"))
    start = rng.random() < 0.5
    if start:
        expression = style.pick([f"{s}.startswith({piece!r})", f"{s}[:{len(piece)}] == {piece!r}"])
    else:
        expression = style.pick([f"{s}.endswith({piece!r})", f"{s}[-{len(piece)}:] == {piece!r}"])
    where = "starts" if start else "ends"
    matching, other = (piece + "x", "x" + piece) if start else ("x" + piece, piece + "x")
    words = [matching, other, *rng.sample([w for w in WORDS if w], rng.randint(1, 3))]
    cases = [(word,) for word in rng.sample(words, len(words))]
    reference = (lambda w: w.startswith(piece)) if start else (lambda w: w.endswith(piece))
    text = f"Return True if {s} {where} with {piece!r}, otherwise False."
    return Draft(
        text,
        rng.choice((f"{where}_with", f"check_{where}")),
        params,
        reference,
        cases,
        style.returning(expression),
    )


def change_case(rng: random.Random, style: Style) -> Draft:
    (s,) = params = (rng.choice(STRING_PARAMS),)
    method, described = rng.choice(
        [("upper", "upper case"), ("lower", "lower case"), ("title", "title case")]
    )
    cases = [
        (word,) for word in rng.sample([w.capitalize() for w in WORDS] + list(SENTENCES), rng.randint(3, 5))
    ]
    text = f"Return {s} in {described}."
    return Draft(
        text,
        rng.choice((f"to_{method}", method + "_text")),
        params,
        lambda w: getattr(w, method)(),
        cases,
        style.returning(f"{s}.{method}()"),
    )


FAMILIES: dict[str, Callable[[random.Random, Style], Draft]] = {
    family.__name__: family
    for family in (
        add_constant,
        affine,
        two_numbers,
        absolute_difference,
        larger_or_smaller,
        clamp,
        threshold_label,
        divisible,
        in_range,
        sum_filtered,
        count_filtered,
        filter_list,
        map_list,
        product,
        sum_of_squares,
        count_value,
        extreme,
        first_plus_last,
        repeat_string,
        affix,
        count_char,
        reverse_string,
        word_count,
        starts_or_ends,
        change_case,
    )
}


def _call(entry_point: str, args: tuple) -> str:
    return f"{entry_point}({', '.join(repr(a) for a in args)})"


def generate_problem(rng: random.Random, problem_id: str, family: str | None = None) -> CodeProblem:
    """Draw one problem (of ``family``, or of a family drawn uniformly)."""
    family = family or rng.choice(sorted(FAMILIES))
    style_rng = random.Random(rng.getrandbits(64))  # the wording's own stream
    draft = FAMILIES[family](rng, Style(style_rng))
    tests = tuple(
        f"assert {_call(draft.entry_point, case)} == {draft.reference(*case)!r}" for case in draft.cases
    )
    body = draft.body
    if style_rng.random() < 0.25:
        body = [style_rng.choice(COMMENTS), *body]
    solution = "".join(f"\n{INDENT}{line}" for line in body)
    return CodeProblem(
        problem_id, family, draft.description, draft.entry_point, draft.params, tests, solution
    )


def generate_split(
    count: int,
    seed: int,
    prefix: str = "pyfunc",
    excluded: frozenset[str] = frozenset(),
    unique: bool = False,
) -> list[CodeProblem]:
    """Generate ``count`` problems deterministically from ``seed``, skipping prompts in ``excluded``
    (and, with ``unique``, prompts already drawn)."""
    rng = random.Random(seed)
    problems: list[CodeProblem] = []
    seen = set(excluded)
    index = 0
    while len(problems) < count:
        problem = generate_problem(rng, f"{prefix}-{seed}-{index:06d}")
        index += 1
        if problem.prompt in seen:
            continue
        if unique:
            seen.add(problem.prompt)
        problems.append(problem)
    return problems
