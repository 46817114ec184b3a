"""Subprocess entry points for the tf.distribute tests (device setup must
happen before TensorFlow initialises its devices)."""

import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# tests/: helpers.py holds the shared helpers (fixture_options)
sys.path.insert(0, os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def mirrored(train_dir, out_file):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from bilm_keras.data.lm_dataset import BidirectionalLMDataset
    from bilm_keras.training import TrainingRun, train
    from bilm_keras.data.vocab_for_options import load_vocab
    from bilm_keras.training.model_setup import build_model
    from bilm_keras.training.train_step import make_train_step
    from helpers import fixture_options

    devices = ["/cpu:0", "/cpu:1"]
    result = {}
    # a global batch not divisible by the replicas is refused
    try:
        train(fixture_options(batch_size=3), TrainingRun(
            save_dir=out_file + "d", train_prefix=f"{train_dir}/data.txt",
            vocab_file=f"{train_dir}/vocab.txt", devices=devices))
    except ValueError as e:
        result["divisible_error"] = str(e)
    # full softmax and no dropout: the step is deterministic
    options = fixture_options(use_chars=True, dropout=0.0,
                              n_negative_samples_batch=64, batch_size=4,
                              n_tokens_vocab=32)
    vocab = load_vocab(f"{train_dir}/vocab.txt", options)
    data = BidirectionalLMDataset(f"{train_dir}/data.txt", vocab, seed=3)
    batches = data.iter_batches(4, 10)
    global_batches = [next(batches) for _ in range(2)]

    def run(strategy):
        tf.keras.utils.set_random_seed(7)
        with strategy.scope():
            lm, optimizer = build_model(options)
            step = make_train_step(lm, optimizer, strategy, options)
            n = strategy.num_replicas_in_sync
            states = strategy.experimental_distribute_values_from_function(
                lambda ctx: lm.zero_states(4 // n))
            losses = []
            for batch in global_batches:
                dist = strategy.experimental_distribute_values_from_function(
                    lambda ctx, batch=batch: {
                        k: v[ctx.replica_id_in_sync_group * 4 // n:
                             (ctx.replica_id_in_sync_group + 1) * 4 // n]
                        for k, v in batch.items()})
                loss, _, states, _ = step(dist, states)
                losses.append(float(loss))
        return lm, losses

    single_lm, single_losses = run(tf.distribute.get_strategy())
    mirrored_lm, mirrored_losses = run(tf.distribute.MirroredStrategy(devices))
    result["n_variables"] = [len(single_lm.variables),
                             len(mirrored_lm.variables)]
    # one MirroredVariable per variable, with a component on each device
    result["copies"] = sorted({len(v.value.values)
                               for v in mirrored_lm.variables})
    result["losses"] = [single_losses, mirrored_losses]
    result["max_abs_diff"] = max(
        float(np.abs(a.numpy() - b.numpy()).max())
        for a, b in zip(single_lm.variables, mirrored_lm.variables))
    json.dump(result, open(out_file, "w"))


def multi_worker(train_dir, save_dir, out_file):
    from bilm_keras.training import TrainingRun, train
    from helpers import fixture_options

    options = fixture_options(use_chars=True, n_epochs=1, batch_size=2)
    result = train(options, TrainingRun(
        train_prefix=f"{train_dir}/data.txt",
        vocab_file=f"{train_dir}/vocab.txt", save_dir=save_dir, seed=5,
        log_every=2))
    np.savez(out_file, step=result["step"],
             **{v.path: v.numpy() for v in result["model"].variables})


if __name__ == "__main__":
    {"mirrored": mirrored, "multi_worker": multi_worker}[sys.argv[1]](
        *sys.argv[2:])
