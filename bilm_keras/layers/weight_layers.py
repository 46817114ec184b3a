"""``weight_layers``: bilm-tf's ELMo function over the biLM outputs, a
:class:`~bilm_keras.layers.scalar_mix.ScalarMix` kept per name."""

from __future__ import annotations

from typing import Dict, Optional


from bilm_keras.layers.scalar_mix import ScalarMix

_SCALAR_MIXES: Dict[str, ScalarMix] = {}


def weight_layers(
    name: str,
    bilm_ops: dict,
    l2_coef: Optional[float] = None,
    use_top_only: bool = False,
    do_layer_norm: bool = False,
) -> dict:
    """Weights the biLM layers into one ELMo representation per token.

    As in bilm-tf, the weights belong to ``name``: calling again with the
    same name (and settings) reuses them, e.g. for question and context.

    Args:
        name: the representation's name (bilm-tf: variables
            ``{name}_ELMo_W`` and ``{name}_ELMo_gamma``).
        bilm_ops: the dict a :class:`BidirectionalLanguageModel` call
            returns (``lm_embeddings`` `(batch, L, time, dim)` and ``mask``).
        l2_coef: l2 penalty on the layer weights, or None.
        use_top_only: the top layer only (times gamma).
        do_layer_norm: normalise each layer over the unmasked positions.

    Returns:
        ``{"weighted_op": (batch, time, dim), "regularization_op": scalar,
        "scalar_mix": the ScalarMix layer holding the weights}``.
    """
    lm_embeddings = bilm_ops["lm_embeddings"]
    mask = bilm_ops["mask"]
    n_layers = int(lm_embeddings.shape[1])
    settings = dict(n_layers=n_layers, l2_coef=l2_coef,
                    use_top_only=use_top_only, do_layer_norm=do_layer_norm)
    mix = _SCALAR_MIXES.get(name)
    if mix is None:
        mix = ScalarMix(name=f"{name}_ELMo", **settings)
        _SCALAR_MIXES[name] = mix
    else:
        existing = {k: getattr(mix, k) for k in settings}
        if existing != settings:
            raise ValueError(
                f"weight_layers('{name}'): already created with {existing}, "
                f"now called with {settings}; use another name"
            )
    weighted = mix(lm_embeddings, mask)
    return {
        "weighted_op": weighted,
        "regularization_op": mix.regularization(),
        "scalar_mix": mix,
    }


def reset_weight_layers() -> None:
    """Forgets every named ScalarMix (a fresh start, e.g. between tests)."""
    _SCALAR_MIXES.clear()


__all__ = ["weight_layers", "reset_weight_layers"]
