"""``python -m bilm_keras.cli``: the ``bilm-keras`` command."""

from bilm_keras.cli import console_main

console_main()
