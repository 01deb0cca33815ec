#!/usr/bin/env python3
"""Every file of the repository the docs name exists: a path such as
`scripts/bench_python.sh` or `benchmarks/python/call_cost.py` in README.md,
docs/*.md or a folder's README.md (relative to the repository root, or to
the README's own folder) must be a file or folder of the source tree, so
that a move cannot leave a documented command pointing nowhere. Paths of
Horovod's repository that the docs cite (its test suite) are not ours.

    check_doc_paths.py SOURCE_DIR
"""
import os
import re
import sys

HOROVODS = ("test/parallel/", "test/utils/")  # Horovod's own tree, cited by the docs
TOPS = ("scripts", "benchmarks", "examples", "test", "docs", "core", "launcher", "python", "frameworks", "cmake")
EXTENSIONS = ("py", "sh", "cc", "h", "c", "md", "cmake", "txt", "json", "cu", "in")
PATH = re.compile(r"(?<![\w./-])((?:\.\./)*(?:%s)/[\w./+-]*\.(?:%s))(?![\w*<>-])" % ("|".join(TOPS), "|".join(EXTENSIONS)))


def docs(root):
    yield os.path.join(root, "README.md")
    for name in sorted(os.listdir(os.path.join(root, "docs"))):
        if name.endswith(".md"):
            yield os.path.join(root, "docs", name)
    for top in TOPS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            if "README.md" in files:
                yield os.path.join(folder, "README.md")


def missing(root, doc):
    here = os.path.dirname(doc)
    with open(doc, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            for path in PATH.findall(line):
                if path.startswith(HOROVODS):
                    continue
                candidates = [os.path.join(root, path), os.path.join(here, path)]
                if not any(os.path.exists(os.path.normpath(c)) for c in candidates):
                    yield f"{os.path.relpath(doc, root)}:{number}: {path} does not exist"


def main():
    root = sys.argv[1]
    problems = [p for doc in docs(root) for p in missing(root, doc)]
    for p in problems:
        print(p)
    if problems:
        print(f"check_doc_paths: {len(problems)} paths in the docs name nothing in the source tree")
        return 1
    print("check_doc_paths: every path the docs name exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
