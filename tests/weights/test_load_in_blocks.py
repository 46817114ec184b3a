"""``load_bilm_tf_hdf5`` copies large datasets block by block (peak memory);
the blocks must reassemble every variable exactly."""

import numpy as np

import numpy_reference as nr
from bilm_keras import BiLMBackbone, BiLMOptions
from bilm_keras.weights import bilm_tf_hdf5


def test_block_assign_equals_file(model_dir, monkeypatch):
    # 1 KB blocks: every LSTM and highway kernel of the fixture goes through
    # several sliced assigns (a ragged last block included)
    monkeypatch.setattr(bilm_tf_hdf5._assign_in_blocks, "__defaults__",
                        (1000,))
    backbone = BiLMBackbone.from_options(
        BiLMOptions.from_json(model_dir / "options.json")).build_all()
    bilm_tf_hdf5.load_bilm_tf_hdf5(backbone, model_dir / "lm_weights.hdf5")
    weights = nr.load_hdf5_weights(model_dir / "lm_weights.hdf5")
    n_blocked = 0
    for row in bilm_tf_hdf5.weight_table(backbone):
        expected = row.to_keras(weights[row.hdf5_path])
        if row.to_keras is bilm_tf_hdf5._identity and expected.size > 250:
            n_blocked += 1
        np.testing.assert_array_equal(row.variable.numpy(), expected,
                                      err_msg=row.hdf5_path)
    assert n_blocked >= 8  # 4 LSTM kernels + 4 projections at least
