#!/usr/bin/env python3
"""The model card's keys are the same in mgpr and in scripts/mgpr_card.py, the exporter's card.

mgpr reads a card in common/src/model_card.cpp: the settings a card may set are the table
kCardSettings, the description's keys (and mgpr_card, the format's version) are the
branches of parse_model_card's `if (key == "...")` chain, and its refusal of an unknown
key lists the description's keys again in words. The exporter writes and checks cards with
CARD_SETTINGS, CARD_DESCRIPTION and the other keys check_card() knows. A key added on one
side only is a card one side writes and the other refuses: this fails naming those keys.

Both files are read as text (Python's with ast: no torch needed, nothing is built). A
table or chain not found where it is expected fails too, saying which, so a refactoring
cannot silently turn the check into a comparison of two empty lists.

Usage: model_card_keys_check.py REPO_ROOT
"""
import ast
import re
import sys
from pathlib import Path

CPP = Path("common/src/model_card.cpp")
PYTHON = Path("scripts/mgpr_card.py")


class NotFound(Exception):
    pass


def strip_comments(source: str) -> str:
    """C++ source without // and /* */ comments (string literals kept as they are)."""
    pattern = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
    return pattern.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", source)


def cpp_keys(source: str):
    """(settings in order, the other keys parse_model_card accepts, the description's keys
    that the unknown-key message lists) from model_card.cpp's text."""
    # Adjacent literals are one string to the compiler (clang-format splits long ones).
    code = re.sub(r'"\s*\n\s*"', "", strip_comments(source))
    table = re.search(r"std::array<\s*std::string_view\s*,\s*(\d+)\s*>\s*kCardSettings\s*\{(.*?)\}\s*;", code, re.S)
    if not table:
        raise NotFound(f"{CPP}: no `std::array<std::string_view, N> kCardSettings{{...}};` table")
    settings = re.findall(r'"([^"]*)"', table.group(2))
    if len(settings) != int(table.group(1)):
        # std::array fills the missing ones with empty strings: the compiler says nothing.
        raise NotFound(f"{CPP}: kCardSettings is declared with {table.group(1)} keys but lists {len(settings)}")

    start = re.search(r"\bModelCard\s+parse_model_card\s*\(", code)
    if not start:
        raise NotFound(f"{CPP}: no parse_model_card definition")
    end = re.search(r"^\}", code[start.end():], re.M)  # the function's closing brace, in column 0
    body = code[start.end():start.end() + end.start()] if end else code[start.end():]
    others = []
    # `if (key == "a") {` and `} else if (key == "a" || key == "b") {`: the keys' own branches,
    # not a test inside one (`key == "gsd" && ...`).
    for condition in re.finditer(r'\bif\s*\(\s*(key\s*==\s*"[^"]*"(?:\s*\|\|\s*key\s*==\s*"[^"]*")*)\s*\)\s*\{', body):
        others += re.findall(r'"([^"]*)"', condition.group(1))
    if not others:
        raise NotFound(f"{CPP}: parse_model_card has no `if (key == \"...\") {{` branch")

    listed = re.search(r'"a card holds \{\}, and ([^"]*)"', code)
    if not listed:
        raise NotFound(f"{CPP}: no unknown-key message \"a card holds {{}}, and ...\"")
    described = [word.strip() for word in listed.group(1).split(",")]
    return settings, others, described


def python_keys(source: str):
    """(CARD_SETTINGS in order, CARD_DESCRIPTION, every key check_card() knows) from
    mgpr_card.py's text."""
    tree = ast.parse(source, str(PYTHON))
    tuples = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("CARD_SETTINGS", "CARD_DESCRIPTION"):
                if not isinstance(node.value, (ast.Tuple, ast.List)) or not all(
                        isinstance(item, ast.Constant) and isinstance(item.value, str) for item in node.value.elts):
                    raise NotFound(f"{PYTHON}: {name} is not a tuple of strings")
                tuples[name] = [item.value for item in node.value.elts]
    for name in ("CARD_SETTINGS", "CARD_DESCRIPTION"):
        if name not in tuples:
            raise NotFound(f"{PYTHON}: no module-level {name} = (...)")

    check = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "check_card"), None)
    if check is None:
        raise NotFound(f"{PYTHON}: no check_card()")
    known = None
    for node in ast.walk(check):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "known" for t in node.targets):
            known = node.value
    if not isinstance(known, ast.Set):
        raise NotFound(f"{PYTHON}: check_card() has no `known = {{...}}` set")
    accepted = []
    for item in known.elts:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            accepted.append(item.value)
        elif isinstance(item, ast.Starred) and isinstance(item.value, ast.Name) and item.value.id in tuples:
            accepted += tuples[item.value.id]
        else:
            raise NotFound(f"{PYTHON}: check_card()'s known set holds {ast.unparse(item)}, "
                           "neither a string nor *CARD_SETTINGS / *CARD_DESCRIPTION")
    return tuples["CARD_SETTINGS"], tuples["CARD_DESCRIPTION"], accepted


def differences(what: str, cpp, python) -> list:
    """The lines that say how two key lists differ; none when they are equal as sets."""
    lines = []
    only_cpp = [key for key in cpp if key not in python]
    only_python = [key for key in python if key not in cpp]
    if only_cpp:
        lines.append(f"{what}: only in {CPP}: {', '.join(only_cpp)}")
    if only_python:
        lines.append(f"{what}: only in {PYTHON}: {', '.join(only_python)}")
    return lines


def compare(cpp_source: str, python_source: str) -> list:
    """Every difference between the two files' keys, as lines; empty when they agree."""
    cpp_settings, cpp_others, cpp_described = cpp_keys(cpp_source)
    py_settings, py_description, py_accepted = python_keys(python_source)
    problems = differences("card settings (kCardSettings / CARD_SETTINGS)", cpp_settings, py_settings)
    if not problems and cpp_settings != py_settings:
        # model_card() writes the settings in CARD_SETTINGS' order, meant to be mgpr's.
        problems.append(f"card settings: the same keys in another order: {CPP} has {', '.join(cpp_settings)}; "
                        f"{PYTHON} has {', '.join(py_settings)}")
    problems += differences("keys a card may hold (parse_model_card / check_card)",
                            cpp_settings + cpp_others, py_accepted)
    problems += differences("description keys (the unknown-key message / CARD_DESCRIPTION)",
                            cpp_described, py_description)
    return problems


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = Path(argv[1])
    try:
        problems = compare((root / CPP).read_text(), (root / PYTHON).read_text())
    except (OSError, SyntaxError, NotFound) as error:
        print(f"FAIL: {error}")
        return 1
    for line in problems:
        print(f"FAIL: {line}")
    if problems:
        print(f"FAIL: the model card's keys differ between {CPP} and {PYTHON}: add or remove them on both sides")
        return 1
    settings, others, _ = cpp_keys((root / CPP).read_text())
    print(f"ok: {CPP} and {PYTHON} agree on the model card's {len(settings) + len(others)} keys "
          f"({len(settings)} settings)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
