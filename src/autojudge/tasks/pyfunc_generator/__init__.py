"""Seeded generator of the toy "pyfunc" problems: tiny function-synthesis tasks with assert tests.

A problem is a one-line description and a signature, e.g. ``Return the sum of the even numbers
in xs.`` / ``def sum_even(xs):``, 3 to 5 ``assert`` tests and a canonical solution: the body that
continues the signature. 25 families (integer arithmetic, comparisons and conditions, list
filters, maps and reductions, max/min, counting, string operations) draw their constants,
operators, names and test inputs at random, so problems differ. Parameter names are many, so that
every family has hundreds of prompts: the held-out splits take distinct prompts, and a family of a
few dozen would lose most of them to the held-out splits.

The solution's wording is drawn from a second random stream, independently of the problem:
loop and accumulator names, the order of operands of commutative operators, an intermediate
variable or a direct return, an optional comment line, a ``for`` loop or a comprehension or a
builtin where they are equivalent. A model's wording is then a coin flip, while its operators,
constants, comparisons and conditions decide whether the tests pass. Solutions stay short (a tiny
model must learn them): a few lines, well under 60 tokens.

Modules: ``problem`` (a generated problem, and the draft a family returns), ``wording`` (the
solution's wording stream), the families by domain (``integers``, ``lists``, ``strings``) and
``splits`` (the family registry, one problem, seeded splits).
"""
