"""The `gpumemtrace` console script: runs the launcher this package carries,
with the library beside it."""
import os
import sys

import gpumemtrace


def main():
    launcher = gpumemtrace.launcher_path()
    if not os.access(launcher, os.X_OK):
        sys.stderr.write("gpumemtrace: the launcher is missing from this "
                         "installation (%s)\n" % launcher)
        return 127
    env = dict(os.environ)
    env.setdefault("GMT_LIBRARY", gpumemtrace.library_path())
    os.execve(launcher, [launcher] + sys.argv[1:], env)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
