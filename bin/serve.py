"""Serve ELMo's vectors over HTTP.

Alias of ``bilm-keras serve`` (same flags; ``--help`` lists them)::

    python bin/serve.py --model elmo-original --port 8080
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras serve``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="serve", prog="serve.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="serve", prog="serve.py"))
