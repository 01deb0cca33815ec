#!/usr/bin/env python3
"""Checks the shape of the code (docs/architecture.md, "Layers"):

  * the folders of core/src include only their own layer's files and those
    of the layers below (LAYERS, lowest first; folders of one layer do not
    include each other), and every folder of core/src has a layer,
  * no function longer than 80 lines (from the line of its name to its
    closing brace, as `lizard -L 80` counts) in core/src, launcher/src,
    frameworks/, examples/ and benchmarks/ (tests are not checked).

Files are sized by concept (one class, or one cohesive set of functions),
so there is no cap on a file's length.

Standard library only, so a fresh CI machine runs it as it is. The function
finder reads C++ as braces: comments, string and character literals and
preprocessor lines are blanked first, then every `{` at namespace or class
scope whose header ends like a function's (`)`, `const`, `override`, ...)
opens a function that ends at its matching `}`.

usage: check_code_shape.py [REPO_ROOT]   (default: the checkout this script is in)
Exit status 1 and one line per offence when a rule is broken.
"""

import os
import re
import sys

CORE_SRC = "core/src"  # every rule
FUNCTION_ONLY = ["launcher/src", "frameworks", "examples", "benchmarks"]  # the function length only
# The layers of core/src, lowest first: a folder includes its own files, the
# public headers (chorus/) and the folders of lower layers, nothing else.
# Sub-folders (comm/tcp, device/cuda) belong to their top folder's layer.
LAYERS = [
    ["common"],
    ["kernels", "negotiation", "net", "timeline"],
    ["fusion", "rendezvous", "tuning"],
    ["comm"],
    ["dataplane"],
    ["engine"],
    ["device"],
    ["api"],
    ["c_api"],
]
LAYER_OF = {folder: level for level, folders in enumerate(LAYERS) for folder in folders}
# chorusrun links chorus_common and chorus_rendezvous (launcher/CMakeLists.txt),
# not the whole core: launcher/src may include those folders of core/src only.
LAUNCHER_SRC = "launcher/src"
LAUNCHER_MAY_INCLUDE = ["common", "rendezvous"]
MAX_FUNCTION_LINES = 80
SOURCE_SUFFIXES = (".h", ".cc", ".cpp", ".hpp", ".cu", ".cuh")
# What may stand right before a function body's `{`.
BODY_OPENERS = {")", "const", "override", "final", "noexcept", "mutable", "try"}
SCOPE_KEYWORDS = re.compile(r'\b(namespace|class|struct|union|enum)\b|\bextern\s+"')
# What may precede a function's name in its header: access labels,
# template parameter lists, attributes.
ACCESS_LABEL = re.compile(r"\s*(public|private|protected)\s*:(?!:)")


def blank_code(text):
    """`text` with comments, literals and preprocessor lines replaced by
    spaces (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.extend("\n" if ch == "\n" else " " for ch in text[i:end])
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            paren = text.find("(", i + 2)
            delim = ")" + text[i + 2:paren] + '"'
            end = text.find(delim, paren)
            end = n if end < 0 else end + len(delim)
            out.extend("\n" if ch == "\n" else " " for ch in text[i:end])
            i = end
        elif c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n - 1) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """True for the ' in 1'000'000 (C++14), not a character literal."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return j < i and text[j].isdigit()


def matching_brace(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def last_token(header):
    header = header.rstrip()
    if not header:
        return ""
    if header[-1] == ")":
        return ")"
    m = re.search(r"[A-Za-z_]\w*$", header)
    return m.group(0) if m else header[-1]


def is_function_header(header):
    if ")" not in header:
        return False
    return last_token(header) in BODY_OPENERS or "->" in header


def skip_balanced(text, at, open_char, close_char):
    """Index after the group that opens at text[at] (== open_char)."""
    depth = 0
    for k in range(at, len(text)):
        depth += text[k] == open_char
        depth -= text[k] == close_char
        if depth == 0:
            return k + 1
    return len(text)


def name_offset(header):
    """Where the function's own header starts: past access labels,
    template<...> and attributes, as lizard counts a function's lines."""
    k = 0
    while True:
        m = ACCESS_LABEL.match(header, k)
        if m:
            k = m.end()
            continue
        rest = header[k:]
        stripped = len(rest) - len(rest.lstrip())
        k += stripped
        if header.startswith("template", k) and "<" in header[k:]:
            k = skip_balanced(header, header.index("<", k), "<", ">")
        elif header.startswith("[[", k):
            k = skip_balanced(header, k, "[", "]")
        elif header.startswith("__attribute__", k) and "(" in header[k:]:
            k = skip_balanced(header, header.index("(", k), "(", ")")
        else:
            return k


def function_name(header):
    before_params = header.split("(", 1)[0]
    if "operator" in header:
        m = re.search(r"([\w:~]*operator\s*[^\s(]*)\s*\(", header)
        if m:
            return m.group(1)
    names = re.findall(r"[A-Za-z_~][\w:~]*", before_params)
    return names[-1] if names else "(lambda)"


def functions(code):
    """(name, first line, last line) of each function body in `code`."""
    found = []

    def scan(start, end):  # a namespace or class body: [start, end)
        header_start = start
        k = start
        while k < end:
            c = code[k]
            if c in ";}":
                header_start = k + 1
            elif c == "{":
                header = code[header_start:k]
                close = matching_brace(code, k)
                offset = name_offset(header)
                own_header = header[offset:]
                if header.count("(") > header.count(")"):
                    pass  # a lambda or braces inside an argument list (a constructor's initializers)
                elif is_function_header(header):
                    first = code.count("\n", 0, header_start + offset) + 1
                    last = code.count("\n", 0, close) + 1
                    found.append((function_name(own_header), first, last))
                    header_start = close + 1
                elif SCOPE_KEYWORDS.search(own_header) and "=" not in own_header:
                    scan(k + 1, close)
                    header_start = close + 1
                # else: a brace initializer; it stays part of the header
                k = close
            k += 1

    scan(0, len(code))
    return found


def include_folders(path, src_root):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r'\s*#\s*include\s+"([^"/]+)/', line)
            if m and os.path.isdir(os.path.join(src_root, m.group(1))):
                yield m.group(1)


def source_files(root):
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(folder, name)


def long_functions(path, shown):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for fn, first, last in functions(blank_code(text)):
        if last - first + 1 > MAX_FUNCTION_LINES:
            yield f"{shown}:{first}: function {fn} is {last - first + 1} lines (at most {MAX_FUNCTION_LINES})"


def layer_problems(rel, path, src_root, shown_root):
    """Includes of `rel` (a file under core/src) that run up or across the layers."""
    top = rel.split(os.sep)[0]
    if top == rel:
        return [f"{shown_root}/{rel}: a file directly in {shown_root} has no layer; put it in a folder"]
    if top not in LAYER_OF:
        return [f"{shown_root}/{top}/: a folder with no layer; add it to LAYERS in scripts/check_code_shape.py"]
    problems = []
    for included in sorted(set(include_folders(path, src_root))):
        if included == top:
            continue
        if included not in LAYER_OF or LAYER_OF[included] >= LAYER_OF[top]:
            problems.append(f"{shown_root}/{rel}: includes {included}/, which is not below {top}/ "
                            f"(layers, lowest first: {layer_text()})")
    return problems


def layer_text():
    return " < ".join(", ".join(folders) for folders in LAYERS)


def check_core(src_root, shown_root):
    """Every rule, on core/src."""
    problems = []
    for path in source_files(src_root):
        rel = os.path.relpath(path, src_root)
        problems.extend(long_functions(path, f"{shown_root}/{rel}"))
        problems.extend(layer_problems(rel, path, src_root, shown_root))
    return list(dict.fromkeys(problems))  # a folder with no layer is said once


def launcher_problems(repo):
    """Includes of launcher/src that reach core/src beyond LAUNCHER_MAY_INCLUDE."""
    src_root = os.path.join(repo, CORE_SRC)
    problems = []
    for path in source_files(os.path.join(repo, LAUNCHER_SRC)):
        for included in sorted(set(include_folders(path, src_root))):
            if included not in LAUNCHER_MAY_INCLUDE:
                problems.append(f"{os.path.relpath(path, repo)}: includes {CORE_SRC}/{included}/, but chorusrun "
                                f"links only {', '.join(f + '/' for f in LAUNCHER_MAY_INCLUDE)} of the core")
    return problems


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, ".."))
    problems = check_core(os.path.join(repo, CORE_SRC), CORE_SRC)
    problems.extend(launcher_problems(repo))
    for other in FUNCTION_ONLY:
        for path in source_files(os.path.join(repo, other)):
            problems.extend(long_functions(path, os.path.relpath(path, repo)))
    where = ", ".join([CORE_SRC] + FUNCTION_ONLY)
    if problems:
        print(f"check_code_shape: {len(problems)} problem(s) in {where}:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"check_code_shape: in shape ({CORE_SRC} layers: {layer_text()}; {LAUNCHER_SRC} includes of them: "
          f"{', '.join(LAUNCHER_MAY_INCLUDE)}; functions <= {MAX_FUNCTION_LINES} lines in {where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
