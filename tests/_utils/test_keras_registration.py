"""The package's Keras layers are known to ``keras.saving`` once Keras is
imported, before or after the package, and the package does not import
Keras for it (a fresh interpreter each, to see the imports)."""

import json
import subprocess
import sys

import pytest

from helpers import user_env

CHILD = """
import json, sys
{first}
before = "keras" in sys.modules
{second}
import keras
registry = keras.saving.get_custom_objects()
entry = registry["bilm_keras>ELMoEmbedding"]
loaded = "bilm_keras.keras_layer.elmo_embedding" in sys.modules
print(json.dumps({{"keras_before": before, "module_loaded": loaded,
                   "has_from_config": hasattr(entry, "from_config"),
                   "mask": "bilm_keras>TokenMask" in registry}}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("first, second, keras_before", [
    ("import bilm_keras", "", False),
    # a second fresh interpreter: the full suite's
    pytest.param("import keras", "import bilm_keras", True,
                 marks=pytest.mark.slow),
])
def test_registered_without_importing_keras(first, second, keras_before):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(first=first, second=second)],
        capture_output=True, text=True, env=user_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"keras_before": keras_before, "module_loaded": False,
                   "has_from_config": True, "mask": True}


def test_the_stand_in_builds_the_real_layer():
    import keras

    from bilm_keras._utils.keras_registration import _stand_in
    from bilm_keras.export.token_mask import TokenMask

    stand_in = _stand_in("bilm_keras>TokenMask",
                         "bilm_keras.export.token_mask", "TokenMask")
    layer = stand_in.from_config({"name": "m"})
    assert type(layer) is TokenMask and layer.name == "m"
    assert keras.saving.get_custom_objects()[
        "bilm_keras>TokenMask"] is TokenMask
