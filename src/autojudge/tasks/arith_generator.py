"""Seeded generator of the toy "arith" word problems and their chain-of-thought solutions.

Every problem is a start amount followed by 2-4 events (add, subtract, multiply).
The question fixes the numbers; the solution's wording is drawn uniformly from
equivalent phrasings (verbs, connectives, clause orders, operand orders) independently
of the numbers, so a model's greedy wording is a coin flip while its numbers are not.

Four styles exist: ``standard`` (the training distribution), ``variant`` (other names, nouns
and question sentences, numbers in the standard range: a second arith domain for a pair trained
on both), ``shifted`` (other story templates and larger numbers) for domain-shift tests, and
``unseen`` (standard sentences and numbers with names and items that occur in no other style, so in
no training example of any source: does a model count, or recall the words it was trained on?).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES_STANDARD = [
    ("Tom", "he", "his"),
    ("Anna", "she", "her"),
    ("Ben", "he", "his"),
    ("Lily", "she", "her"),
    ("Sam", "he", "his"),
    ("Mia", "she", "her"),
    ("Leo", "he", "his"),
    ("Emma", "she", "her"),
    ("Max", "he", "his"),
    ("Zoe", "she", "her"),
]
FRIENDS = ["a friend", "a neighbor", "the teacher", "a classmate", "Grandma"]
ITEMS_STANDARD = ["apples", "books", "coins", "marbles", "stickers", "pencils", "cookies", "cards"]

NAMES_VARIANT = [
    ("Omar", "he", "his"),
    ("Nina", "she", "her"),
    ("Ravi", "he", "his"),
    ("Ida", "she", "her"),
    ("Hugo", "he", "his"),
    ("Vera", "she", "her"),
]
ITEMS_VARIANT = ["shells", "stamps", "buttons", "ribbons", "tickets", "badges"]

NAMES_UNSEEN = [
    ("Priya", "she", "her"),
    ("Kofi", "he", "his"),
    ("Greta", "she", "her"),
    ("Tariq", "he", "his"),
    ("Yuki", "she", "her"),
    ("Dmitri", "he", "his"),
]
ITEMS_UNSEEN = ["acorns", "candles", "feathers", "lemons", "magnets", "walnuts"]

NAMES_SHIFTED = [("the shop", "it", "its"), ("the farm", "it", "its"), ("the library", "it", "its")]
ITEMS_SHIFTED = ["boxes", "crates", "bottles", "bags"]

ANSWER_PREFIX = "The final answer is"


@dataclass(frozen=True)
class Event:
    """One step of a problem: an operation on the running amount."""

    op: str  # "add", "sub" or "mul"
    kind: str  # story flavour of the event, e.g. "buy", "give"
    operand: int


@dataclass(frozen=True)
class Problem:
    """A generated problem with its question, reference solution and integer answer."""

    id: str
    question: str
    solution: str
    answer: int
    style: str


@dataclass(frozen=True)
class Limits:
    """Number ranges for one style of problem."""

    start: tuple[int, int]
    operand: tuple[int, int]
    ceiling: int  # every intermediate amount stays below this
    multipliers: tuple[int, ...]
    p_mul: float


STANDARD = Limits(start=(5, 40), operand=(2, 30), ceiling=100, multipliers=(2, 3), p_mul=0.12)
SHIFTED = Limits(start=(20, 150), operand=(10, 90), ceiling=250, multipliers=(2, 3, 4), p_mul=0.15)

# Question sentences per event kind: {N}=name, {P}=pronoun, {n}=operand, {I}=item, {F}=friend.
QUESTION_EVENTS = {
    "buy": "{Pc} buys {n} more {I}.",
    "find": "{Pc} finds {n} more {I}.",
    "receive": "{Fc} gives {N} {n} {I}.",
    "give": "{Pc} gives {n} {I} to {F}.",
    "lose": "{Pc} loses {n} {I}.",
    "double": "{Pc} doubles the number of {I} {P} has.",
    "triple": "{Pc} triples the number of {I} {P} has.",
}
VARIANT_EVENTS = {
    "buy": "Later {P} purchases another {n} {I}.",
    "find": "On a walk {P} collects {n} extra {I}.",
    "receive": "{N} is handed {n} {I} by {F}.",
    "give": "{Pc} passes {n} {I} on to {F}.",
    "lose": "Sadly, {n} {I} go missing.",
    "double": "{Pc} ends up with twice as many {I} as before.",
    "triple": "{Pc} ends up with three times as many {I} as before.",
}
SHIFTED_EVENTS = {
    "deliver": "A truck delivers {n} {I} to {P_obj}.",
    "produce": "{Pc} makes {n} new {I}.",
    "ship": "{Pc} ships {n} {I} away.",
    "break": "{n} of the {I} break.",
    "double": "{Pc} doubles {Poss} stock of {I}.",
    "triple": "{Pc} triples {Poss} stock of {I}.",
    "quadruple": "{Pc} makes {Poss} stock of {I} four times as large.",
}
OP_OF_KIND = {
    "buy": "add",
    "find": "add",
    "receive": "add",
    "deliver": "add",
    "produce": "add",
    "give": "sub",
    "lose": "sub",
    "ship": "sub",
    "break": "sub",
    "double": "mul",
    "triple": "mul",
    "quadruple": "mul",
}
MULTIPLIER_KIND = {2: "double", 3: "triple", 4: "quadruple"}

STYLES = {  # style -> number limits, names, items, question sentences per event kind
    "standard": (STANDARD, NAMES_STANDARD, ITEMS_STANDARD, QUESTION_EVENTS),
    "variant": (STANDARD, NAMES_VARIANT, ITEMS_VARIANT, VARIANT_EVENTS),
    "shifted": (SHIFTED, NAMES_SHIFTED, ITEMS_SHIFTED, SHIFTED_EVENTS),
    "unseen": (STANDARD, NAMES_UNSEEN, ITEMS_UNSEEN, QUESTION_EVENTS),
}

# Solution wording: synonyms of each event kind (present tense, and -ing form).
SOLUTION_VERBS = {
    "buy": [("buys {n} more", "buying {n} more"), ("gets {n} more", "getting {n} more")],
    "find": [("finds {n} more", "finding {n} more"), ("picks up {n} more", "picking up {n} more")],
    "receive": [("gets {n} more", "getting {n} more"), ("receives {n}", "receiving {n}")],
    "give": [("gives away {n}", "giving away {n}"), ("hands over {n}", "handing over {n}")],
    "lose": [("loses {n}", "losing {n}"), ("drops {n}", "dropping {n}")],
    "double": [("doubles them", "doubling them"), ("doubles the amount", "doubling the amount")],
    "triple": [("triples them", "tripling them"), ("triples the amount", "tripling the amount")],
    "quadruple": [
        ("multiplies them by 4", "multiplying them by 4"),
        ("makes them four times as many", "making them four times as many"),
    ],
    "deliver": [("gets {n} more", "getting {n} more"), ("receives {n}", "receiving {n}")],
    "produce": [("makes {n} more", "making {n} more"), ("adds {n}", "adding {n}")],
    "ship": [("ships {n}", "shipping {n}"), ("sends away {n}", "sending away {n}")],
    "break": [("loses {n}", "losing {n}"), ("throws out {n}", "throwing out {n}")],
}
CONNECTIVES = ["Then", "Next,", "After that,", "Now"]
FIRST_CONNECTIVES = ["First,", "To begin,"]
OPENERS = [
    "{N} starts with {a} {I}.",
    "At first, {N} has {a} {I}.",
    "In the beginning, {N} has {a} {I}.",
]
CLOSERS = ["So {W} has {y} {I} in the end.", "In total, {W} has {y} {I}.", "That leaves {y} {I}."]


def _sentence_case(text: str) -> str:
    return text[0].upper() + text[1:]


def _expression(op: str, x: int, n: int, y: int, rng: random.Random) -> str:
    if op == "add":
        a, b = (x, n) if rng.random() < 0.5 else (n, x)
        return f"{a} + {b} = {y}"
    if op == "sub":
        return f"{x} - {n} = {y}"
    return f"{x} * {n} = {y}"


def _apply(op: str, x: int, n: int) -> int:
    return {"add": x + n, "sub": x - n, "mul": x * n}[op]


def _draw_events(rng: random.Random, start: int, limits: Limits, kinds: list[str]) -> list[Event]:
    """Draw 2-4 events keeping every amount in [1, ceiling)."""
    amount = start
    events: list[Event] = []
    add_kinds = [k for k in kinds if OP_OF_KIND[k] == "add"]
    sub_kinds = [k for k in kinds if OP_OF_KIND[k] == "sub"]
    for _ in range(rng.randint(2, 4)):
        multipliers = [m for m in limits.multipliers if amount * m < limits.ceiling]
        if multipliers and rng.random() < limits.p_mul:
            m = rng.choice(multipliers)
            events.append(Event("mul", MULTIPLIER_KIND[m], m))
        elif amount > limits.operand[0] and rng.random() < 0.5:
            n = rng.randint(limits.operand[0], min(limits.operand[1], amount - 1))
            events.append(Event("sub", rng.choice(sub_kinds), n))
        else:
            high = min(limits.operand[1], limits.ceiling - 1 - amount)
            if high < limits.operand[0]:
                n = rng.randint(limits.operand[0], min(limits.operand[1], amount - 1))
                events.append(Event("sub", rng.choice(sub_kinds), n))
            else:
                events.append(Event("add", rng.choice(add_kinds), rng.randint(limits.operand[0], high)))
        amount = _apply(events[-1].op, amount, events[-1].operand)
    return events


def generate_problem(rng: random.Random, problem_id: str, style: str = "standard") -> Problem:
    """Draw one problem of the given style (one of `STYLES`)."""
    if style not in STYLES:
        raise ValueError(f"unknown arith style {style!r}: expected one of {', '.join(STYLES)}")
    limits, names, items, templates = STYLES[style]
    name, pronoun, possessive = rng.choice(names)
    item = rng.choice(items)
    friend = rng.choice(FRIENDS)
    start = rng.randint(*limits.start)
    kinds = [k for k in templates if OP_OF_KIND[k] != "mul"]
    events = _draw_events(rng, start, limits, kinds)

    fields = {
        "N": name,
        "P": pronoun,
        "Pc": _sentence_case(pronoun),
        "P_obj": "it" if pronoun == "it" else ("him" if pronoun == "he" else "her"),
        "Poss": possessive,
        "I": item,
        "F": friend,
        "Fc": _sentence_case(friend),
    }
    sentences = [f"{name} has {start} {item}."]
    for event in events:
        sentences.append(templates[event.kind].format(n=event.operand, **fields))
    sentences.append(
        f"What is the number of {item} {name} owns at the end?"
        if style == "variant"
        else f"How many {item} does {name} have now?"
    )
    question = " ".join(_sentence_case(s) for s in sentences)

    solution_parts = [rng.choice(OPENERS).format(a=start, **fields)]
    amount = start
    for index, event in enumerate(events):
        new_amount = _apply(event.op, amount, event.operand)
        solution_parts.append(_step_sentence(rng, index, event, amount, new_amount, name, pronoun, item))
        amount = new_amount
    who = rng.choice([name, pronoun])
    solution_parts.append(rng.choice(CLOSERS).format(W=who, y=amount, I=item))
    solution_parts.append(f"{ANSWER_PREFIX} {amount}.")
    solution = " ".join(_sentence_case(s) for s in solution_parts)
    return Problem(id=problem_id, question=question, solution=solution, answer=amount, style=style)


def _step_sentence(
    rng: random.Random, index: int, event: Event, x: int, y: int, name: str, pronoun: str, item: str
) -> str:
    connective = rng.choice(FIRST_CONNECTIVES if index == 0 else CONNECTIVES)
    present, gerund = rng.choice(SOLUTION_VERBS[event.kind])
    present, gerund = present.format(n=event.operand), gerund.format(n=event.operand)
    expression = _expression(event.op, x, event.operand, y, rng)
    who, who_again = rng.choice([name, pronoun]), rng.choice([name, pronoun])
    form = rng.randrange(3)
    if form == 0:
        return f"{connective} {who} {present}, so {who_again} has {expression} {item}."
    if form == 1:
        return f"After {gerund}, {who} has {expression} {item}."
    return f"{connective} {who} {present}: {expression}, so {who_again} now has {y} {item}."


def generate_split(count: int, seed: int, style: str = "standard", prefix: str = "arith") -> list[Problem]:
    """Generate ``count`` problems deterministically from ``seed``."""
    rng = random.Random(seed)
    return [generate_problem(rng, f"{prefix}-{style}-{seed}-{i:06d}", style) for i in range(count)]
