"""The whole path on one machine: vocabulary -> train -> heldout
perplexity -> HDF5 -> embeddings of two heldout sentences. The README's
end-to-end demo."""

from __future__ import annotations

import glob
import logging
import os
import time
from typing import Optional

# The modules that run it are imported when it runs: `bilm-keras
# pipeline --help` reads run_pipeline's defaults without TensorFlow.

logger = logging.getLogger(__name__)


def heldout_examples(pattern: str, n: int = 2) -> list:
    """The first ``n`` sentences (lines with a token) of the heldout files
    matching ``pattern``, in file-name order: the pipeline's demo embeds
    the user's own text, whatever its language."""
    from bilm_keras.data.sentence_file import read_sentence_lines

    examples = []
    for path in sorted(glob.glob(pattern)):
        for line in read_sentence_lines(path):
            if line.split():
                examples.append(line.split())
                if len(examples) == n:
                    return examples
    return examples


# Eight keyword-only parameters: bilm-keras pipeline's flags, one each.
def run_pipeline(
    *,
    out_dir: str,
    corpus: Optional[str] = None,
    heldout: Optional[str] = None,
    options_file: str = "tiny",
    n_epochs: Optional[int] = None,
    max_sentences: Optional[int] = 6000,
    min_count: int = 2,
    seed: int = 0,
) -> dict:
    """Builds a vocabulary, trains a biLM, tests it, dumps and uses it.

    Args:
        out_dir: everything goes here: ``corpus/`` (stdlib corpus),
            ``vocab.txt``, ``checkpoints/``, ``model/lm_weights.hdf5`` and
            ``model/options.json``.
        corpus: glob of the user's training files, one tokenized sentence
            per line. The default is the English docstrings of Python's
            standard library, with no download.
        heldout: glob of heldout files. The default is the stdlib corpus's
            heldout part, or ``corpus`` itself when only it is given.
        options_file: the model to train, an options file or a preset's
            name from :mod:`bilm_keras.presets`. Default ``"tiny"``.
        n_epochs: override the options' epochs.
        max_sentences: size of the stdlib corpus.
        min_count: vocabulary cut-off.

    Returns:
        dict with the paths written and three more keys. ``perplexity``
        holds the heldout results of :func:`evaluate`, ``train`` the
        result of :func:`train`, and ``embeddings`` the shapes of the ELMo
        layers of two heldout sentences.
    """
    from bilm_keras.bidirectional_language_model import (
        BidirectionalLanguageModel,
    )
    from bilm_keras.data.stdlib_corpus import write_stdlib_corpus
    from bilm_keras.data.vocab_builder import build_vocab
    from bilm_keras.options import BiLMOptions
    from bilm_keras.presets import options_file as preset_or_path
    from bilm_keras.training.evaluation import evaluate
    from bilm_keras.training.loop import train
    from bilm_keras.training.training_run import TrainingRun
    from bilm_keras.save_dirs.weight_dump import dump_weights
    from bilm_keras.weights.model_detection import detect_model

    options = BiLMOptions.from_json(preset_or_path(options_file))
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    start = time.perf_counter()
    # 1. corpus: the user's, or stdlib docstrings
    if corpus is None:
        written = write_stdlib_corpus(
            os.path.join(out_dir, "corpus"), max_sentences=max_sentences,
            seed=seed,
        )
        corpus = written["train_prefix"]
        heldout = heldout or written["heldout_prefix"]
    heldout = heldout or corpus
    # 2. vocabulary
    vocab_file = os.path.join(out_dir, "vocab.txt")
    vocab_stats = build_vocab(corpus, vocab_file, min_count=min_count)
    logger.info(f"vocabulary: {vocab_stats['n_tokens_vocab']} tokens, "
                f"{vocab_stats['n_train_tokens']} training tokens")
    # 3. train
    save_dir = os.path.join(out_dir, "checkpoints")
    trained = train(options, TrainingRun(
        train_prefix=corpus, vocab_file=vocab_file, save_dir=save_dir,
        n_epochs=n_epochs, n_train_tokens=vocab_stats["n_train_tokens"],
        seed=seed))
    # 4. heldout perplexity (full softmax), of the run detected once
    run = detect_model(save_dir)
    perplexity = evaluate(save_dir=run, vocab_file=vocab_file,
                          test_prefix=heldout, batch_size=32)
    # 5. dump to bilm-tf HDF5 + options.json
    dumped = dump_weights(run, os.path.join(out_dir, "model",
                                            "lm_weights.hdf5"))
    # 6. embed two heldout sentences with the inference model
    bilm = BidirectionalLanguageModel(dumped["options_file"],
                                      dumped["weight_file"])
    examples = heldout_examples(heldout)
    embeddings = bilm.embed_sentences(examples)
    for sentence, emb in zip(examples, embeddings):
        logger.info(f"ELMo layers {emb.shape} for: {' '.join(sentence)}")
    logger.info(f"pipeline done in {time.perf_counter() - start:.0f} s")
    for line in perplexity["warnings"]:  # repeated where they are seen
        logger.info(line)
    return dict(
        vocab_file=vocab_file, save_dir=save_dir, **dumped,
        perplexity=perplexity, train=trained,
        embeddings=[e.shape for e in embeddings],
    )
