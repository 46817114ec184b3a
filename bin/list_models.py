"""List the published models that ``--model`` takes by name, and which are
cached.

Alias of ``bilm-keras models`` (same flags; ``--help`` lists them)::

    python bin/list_models.py
    python bin/list_models.py --cached
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras models``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="models", prog="list_models.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="models", prog="list_models.py"))
