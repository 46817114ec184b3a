"""The one thing setup.cfg cannot say: the presets' single copy is the
repository's top-level ``options/`` (the design card's layout), shipped in
the wheel as the data package ``bilm_keras.presets.files``
(``bilm_keras/presets/files/*.json``, read by
:func:`bilm_keras.presets.preset_file`). Everything else is in setup.cfg.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["bilm_keras", "bilm_keras.*"])
    + ["bilm_keras.presets.files"],
    package_dir={"bilm_keras.presets.files": "options"},
    package_data={"bilm_keras.pretrained": ["registry.json"],
                  "bilm_keras.presets.files": ["*.json"]},
)
