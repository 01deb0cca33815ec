"""The `chorusrun` console script of the pip-installed package (as Horovod's
package puts horovodrun on PATH): runs the chorusrun binary shipped inside
the package (chorus/bin), or a source checkout's build/launcher/chorusrun."""
import os
import pathlib
import sys


def binary():
    here = pathlib.Path(__file__).resolve().parent
    for candidate in (here / "bin" / "chorusrun",
                      pathlib.Path(os.environ.get("CHORUS_BUILD_DIR", here.parent.parent / "build")) / "launcher" /
                      "chorusrun"):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    raise SystemExit("chorusrun: the chorusrun binary is not in this installation of chorus (looked in "
                     f"{here / 'bin'}); reinstall the package with pip")


def main():
    path = binary()
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
