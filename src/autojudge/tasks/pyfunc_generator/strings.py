"""Families on strings: repeats, affixes, letter and word counts, reversal, prefixes, case."""

from __future__ import annotations

import random

from autojudge.tasks.pyfunc_generator.problem import Draft
from autojudge.tasks.pyfunc_generator.wording import CHAR_NAMES, COUNTER_NAMES, INDENT, Style, loop

STRING_PARAMS = ("s", "text", "word", "line", "name", "phrase", "sentence", "string", "txt")
WORDS = ("apple", "banana", "cherry", "kiwi", "mango", "hello", "level", "python", "data", "code", "ab", "")
SENTENCES = ("hello world", "a b c", "one", "", "the quick brown fox", "to be or not", "x  y")
SUFFIXES = ("!", "ing", "_x", "ed", "?", "s")


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
        body = [f"{count} = 0", *loop(s, ch, inner), f"return {count}"]
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
