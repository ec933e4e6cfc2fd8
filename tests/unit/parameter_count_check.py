#!/usr/bin/env python3
"""Refuses functions with more than a few parameters in the C++ sources under a folder.

A function that needs nine values wants a struct or an object that holds them: the
run's phases pass a small context, each stage its own small options. The check reads
declarations and definitions (a name after a type, its parameter list followed by a
body, `;`, `const`, `override`, `noexcept`, `->` or a constructor's `:`), not calls,
which follow `=`, `return`, `.`, `->` or `(`. Comments and string literals are blanked
first, so a comma inside them counts for nothing.

Usage: parameter_count_check.py FOLDER [--max N]   (default N: 8)
"""

import argparse
import re
import sys
from pathlib import Path

# What may follow a declaration's parameter list.
DECLARATION_END = re.compile(r"\s*(?:const\b|override\b|noexcept\b|final\b|&|->|=\s*(?:0|default|delete)|[{;:])")
# What may precede a declared function's name: a type's last character.
TYPE_END = re.compile(r"[\w>&*\]]\s*$")
# Words after which a name with parentheses is a call or an expression.
NOT_A_TYPE = {"return", "co_return", "throw", "new", "else", "case", "delete", "sizeof", "decltype", "co_await"}
NAME_AND_PAREN = re.compile(r"(~?\b[A-Za-z_]\w*)\s*\(")
CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "static_assert", "alignof"}


def blank_comments_and_strings(text: str) -> str:
    """The source with comments, string and character literals replaced by spaces."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
    return pattern.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), text)


def closing_paren(text: str, open_index: int) -> int:
    """The index of the parenthesis closing the one at open_index, or -1."""
    depth = 0
    for index in range(open_index, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def count_parameters(parameters: str) -> int:
    """Top-level commas plus one; nested (), <>, {} and [] hide theirs."""
    if not parameters.strip() or parameters.strip() == "void":
        return 0
    depth = 0
    count = 1
    for char in parameters:
        if char in "(<{[":
            depth += 1
        elif char in ")>}]":
            depth -= 1
        elif char == "," and depth == 0:
            count += 1
    return count


def word_before(text: str, index: int) -> str:
    match = re.search(r"(\w+)\s*$", text[max(0, index - 64) : index])
    return match.group(1) if match else ""


def oversized_functions(path: Path, limit: int) -> list[str]:
    text = blank_comments_and_strings(path.read_text(encoding="utf-8", errors="replace"))
    found = []
    for match in NAME_AND_PAREN.finditer(text):
        name = match.group(1)
        if name in CONTROL:
            continue
        before = text[max(0, match.start() - 200) : match.start()]
        if not TYPE_END.search(before) or before.rstrip().endswith("->"):
            continue
        if word_before(text, match.start()) in NOT_A_TYPE:
            continue
        close = closing_paren(text, match.end() - 1)
        if close < 0 or not DECLARATION_END.match(text, close + 1):
            continue
        count = count_parameters(text[match.end() : close])
        if count > limit:
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path}:{line}: {name} takes {count} parameters (at most {limit})")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--max", type=int, default=8)
    arguments = parser.parse_args()
    sources = sorted(p for p in arguments.folder.rglob("*") if p.suffix in {".cpp", ".hpp", ".cu", ".h"})
    if not sources:
        print(f"parameter_count_check: no C++ sources under {arguments.folder}", file=sys.stderr)
        return 2
    problems = [problem for source in sources for problem in oversized_functions(source, arguments.max)]
    for problem in problems:
        print(problem)
    if problems:
        print(
            f"parameter_count_check: {len(problems)} function(s) take more than {arguments.max} parameters: "
            "group what travels together into a struct or an object",
            file=sys.stderr,
        )
        return 1
    print(f"parameter_count_check: {len(sources)} files, no function over {arguments.max} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
