"""write_model_files: the folder every converter writes, read back by
h5py and by the options parser, and written without TensorFlow."""

import json
import os
import subprocess
import sys

import h5py
import numpy as np

from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.weights.model_folder import WEIGHT_FILE, write_model_files


def test_the_weights_and_options_read_back(tmp_path, bilm_fixtures):
    with open(os.path.join(bilm_fixtures, "model", "options.json"),
              encoding="utf-8") as f:
        options = json.load(f)
    with h5py.File(os.path.join(bilm_fixtures, "model",
                                "lm_weights.hdf5"), "r") as fin:
        datasets = []
        fin.visititems(lambda name, obj: datasets.append(
            (name, obj[()])) if isinstance(obj, h5py.Dataset) else None)
    write_model_files(tmp_path, datasets, options)

    assert sorted(os.listdir(tmp_path)) == sorted([WEIGHT_FILE,
                                                   OPTIONS_FILE])
    with h5py.File(tmp_path / WEIGHT_FILE, "r") as fin:
        for name, value in datasets:
            np.testing.assert_array_equal(fin[name][()], value)
    assert (BiLMOptions.from_json(tmp_path / OPTIONS_FILE)
            == BiLMOptions.from_dict(options))


def test_it_imports_no_tensorflow_numpy_or_h5py():
    # `bilm-keras models` names WEIGHT_FILE through it and imports none
    code = ("import sys, bilm_keras.weights.model_folder; "
            "print([m for m in ('tensorflow', 'numpy', 'h5py') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "[]"
