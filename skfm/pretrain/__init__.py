"""Pretraining: ``skfm pretrain <model>`` on synthetic data, resumable, data-parallel ready.

One module per model (``tabswift``, ``mantis``, ``timeseries_backbone``), the shared loop
(``_loop``), ``torchrun`` support (``_distributed``, whose :class:`World` the command line
reads) and the synthetic priors (``tabular_prior``, ``timeseries_prior``). Inference never
imports this package.
"""

from skfm.pretrain._distributed import World

__all__ = ["World"]
