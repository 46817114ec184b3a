"""General helpers with no biLM in them, private to bilm_keras.

* :mod:`.atomic_files`: write a file or a directory completely or not at
  all.
* :mod:`.durations`: ``h:mm:ss`` for progress lines.
* :mod:`.eager`: the clear error for TF1 graph mode.
* :mod:`.graph_function`: ``tf.function`` without AutoGraph, the one
  way the package traces a graph.
* :mod:`.lazy`: public names imported on first use (PEP 562).
* :mod:`.settings`: :class:`~.settings.SettingError`, the error a
  settings value raises, naming its field, and the checks it uses.
* :mod:`.version`: the package version.

The lowest layer of the package (``docs/architecture.md``): nothing here
imports any other part of bilm_keras.
"""
