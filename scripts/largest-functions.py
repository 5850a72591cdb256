#!/usr/bin/env python3
"""The largest functions and files of a checkout's src/, for reviews of the code's shape.

Usage: scripts/largest-functions.py <repo-root> [--functions N] [--files N]

Prints the N largest function definitions (15 by default) by lines, from the line of the name to
the closing brace, with their name and file:line, then the N largest files (10 by default) by
lines. C and C++ sources only (.cpp .cc .cu .c .h .hpp .cuh). Needs nothing but Python 3.

It reads the code without compiling it: comments, string and character literals (raw strings
included) and preprocessor lines are blanked first, then every brace at namespace, class or
extern scope that follows a parameter list opens a function. A lambda or a local class counts
as part of the function around it; a lambda stored in a variable at namespace scope is not a
function here. The heuristics are exact on this repository's style, and close elsewhere.
"""
import argparse
import re
import sys
from pathlib import Path

SOURCE_SUFFIXES = {".cpp", ".cc", ".cu", ".c", ".h", ".hpp", ".cuh"}
NOT_A_NAME = {
    "if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "alignas",
    "decltype", "noexcept", "requires", "static_assert", "__attribute__", "throw", "new",
    "delete", "typeid",
}
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def blank(text: str) -> str:
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines
    kept, so that positions map to the same lines)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, continued by trailing backslashes.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == '"':
            raw = re.match(r'([^()\\\s]{0,16})\(', text[i + 1:i + 20])
            if is_raw_string_prefix(text, i) and raw is not None:
                delimiter = ")" + raw.group(1) + '"'
                end = text.find(delimiter, i)
                end = n if end < 0 else end + len(delimiter)
            else:
                end = i + 1
                while end < n and text[end] not in '"\n':
                    end += 2 if text[end] == "\\" else 1
                end = min(end + 1, n)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end]))
            i = end
        elif c == "'" and not is_digit_separator(text, i):
            end = i + 1
            while end < n and text[end] not in "'\n":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_raw_string_prefix(text: str, i: int) -> bool:
    """Whether the quote at i opens a raw string: R"(...)", u8R"(...)" and the like."""
    match = re.search(r"(\w*)$", text[max(0, i - 4):i])
    return match.group(1) in ("R", "u8R", "uR", "UR", "LR")


def is_digit_separator(text: str, i: int) -> bool:
    """Whether the quote at i separates digits (1'000'000, 0xFF'FF) rather than opening a
    character literal."""
    start = i
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_'"):
        start -= 1
    return start < i and text[start].isdigit()


def matching_brace(code: str, i: int) -> int:
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def top_level_paren_groups(header: str):
    """(start, end) of each parenthesized group outside template angle brackets and other
    parentheses."""
    groups, depth, angle, start = [], 0, 0, 0
    for j, c in enumerate(header):
        if c == "<" and depth == 0:
            before = header[:j].rstrip()
            word = IDENTIFIER.findall(before[-40:])
            if before and (before[-1].isalnum() or before[-1] == "_") and \
                    not (word and word[-1] == "operator"):
                angle += 1
        elif c == ">" and depth == 0 and angle > 0 and header[j - 1] != "-":
            angle -= 1
        elif c == "(" and angle == 0:
            if depth == 0:
                start = j
            depth += 1
        elif c == ")" and angle == 0 and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append((start, j))
    return groups


def function_name(header: str):
    """The declared name when `header` (the text before a brace) ends a function's signature;
    None otherwise. Also the name's offset in the header."""
    stripped = header.strip()
    if not stripped or re.match(r"(template\s*<.*>\s*)?(namespace|class|struct|union|enum)\b",
                                stripped, re.S):
        return None
    for start, _ in top_level_paren_groups(header):
        before = header[:start].rstrip()
        operator = re.search(r"(\boperator\b\s*(\(\s*\)|[^\w\s(]+|\w+))\s*$", before)
        if operator:
            match = re.search(r"((?:[A-Za-z_]\w*\s*::\s*)*)" + re.escape(operator.group(1)) + r"\s*$",
                              before)
            return re.sub(r"\s+", "", match.group(0)), match.start()
        match = re.search(r"(~?[A-Za-z_]\w*(?:\s*<[^<>]*>)?(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*$", before)
        if not match:
            return None
        last = re.findall(r"~?[A-Za-z_]\w*", match.group(1))[-1]
        if last in NOT_A_NAME:
            return None
        if "=" in re.sub(r"operator\s*\S+|[<>!=]=|\[[^\]]*\]", "", header[:match.start()]):
            return None  # a variable's initializer, a lambda in a variable
        return re.sub(r"\s+", "", match.group(1)), match.start()
    return None


def scope_kind(header: str) -> str:
    stripped = header.strip()
    if re.match(r"(inline\s+)?namespace\b", stripped) or re.fullmatch(r'extern\s*"\s*"', stripped):
        return "namespace"
    if re.match(r"(template\s*<.*>\s*)?(class|struct|union)\b", stripped, re.S) and \
            "(" not in stripped.split(":")[0]:
        return "class"
    return "other"


def class_name(header: str) -> str:
    match = re.search(r"\b(?:class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?([A-Za-z_]\w*)", header)
    return match.group(1) if match else ""


def functions_in(code: str):
    """(name, first line, lines) of every function defined in blanked code."""
    found = []
    scopes = []  # (kind, name) of the namespace and class scopes open around the position
    header_start = 0
    paren_depth = 0
    i = 0
    while i < len(code):
        c = code[i]
        if c == "(":
            paren_depth += 1
        elif c == ")":
            paren_depth = max(0, paren_depth - 1)
        elif c == ";" and paren_depth == 0:
            header_start = i + 1
        elif c == "}":
            if scopes:
                scopes.pop()
            header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            if paren_depth > 0 or re.search(r"(\w|>)\s*$", header) and \
                    re.search(r"\)\s*(const\s*)?(noexcept\s*)?:(?!:)", header) or \
                    re.search(r"=\s*$", header):
                # A brace initializer: in an argument, in a constructor's member initializer
                # list, or after "=". Part of the header (or statement) around it.
                i = matching_brace(code, i) + 1
                continue
            named = function_name(header)
            if named and not re.search(r"\b(class|struct|enum)\b[^(]*$", header[:named[1]]):
                name, offset = named
                qualifier = "::".join(n for kind, n in scopes if kind == "class" and n)
                if qualifier and "::" not in name:
                    name = qualifier + "::" + name
                end = matching_brace(code, i)
                first = code.count("\n", 0, header_start + offset) + 1
                last = code.count("\n", 0, end) + 1
                found.append((name, first, last - first + 1))
                i = end + 1
                header_start = i
                continue
            kind = scope_kind(header)
            if kind == "other":
                i = matching_brace(code, i) + 1
                header_start = i
                continue
            scopes.append((kind, class_name(header) if kind == "class" else ""))
            header_start = i + 1
        elif c == ":" and paren_depth == 0 and re.search(
                r"\b(public|private|protected)\s*$", code[header_start:i]):
            header_start = i + 1
        i += 1
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="the repository's root (holding src/)")
    parser.add_argument("--functions", type=int, default=15, help="functions to list")
    parser.add_argument("--files", type=int, default=10, help="files to list")
    args = parser.parse_args()
    src = args.root / "src"
    if not src.is_dir():
        print(f"error: {src}: not a directory; give the repository's root", file=sys.stderr)
        return 2
    functions, files = [], []
    for path in sorted(p for p in src.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        relative = path.relative_to(args.root).as_posix()
        files.append((text.count("\n") + (0 if text.endswith("\n") or not text else 1), relative))
        for name, line, lines in functions_in(blank(text)):
            functions.append((lines, name, f"{relative}:{line}"))
    functions.sort(key=lambda f: (-f[0], f[2]))
    files.sort(key=lambda f: (-f[0], f[1]))

    print(f"Largest functions in {src} (lines from the name to the closing brace)")
    print(f"{'lines':>5}  {'function':<48}  where")
    for lines, name, where in functions[:args.functions]:
        print(f"{lines:>5}  {name:<48}  {where}")
    print()
    print(f"Largest files in {src}")
    print(f"{'lines':>5}  file")
    for lines, relative in files[:args.files]:
        print(f"{lines:>5}  {relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
