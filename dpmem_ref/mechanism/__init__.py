"""The exponential mechanism (floor 2, above `dpmem_ref.core`): `em` (the exact description of
a release distribution, its likelihoods and its exact sampler, Eq. 7), `construction` (the
release distribution from scores, and the C3 check of its arguments), `bernoulli` (the exact
Bernoulli samplers and proposal rounds the sampler runs, Canonne-Kamath-Steinke 2020),
`em_sampler` (the exact integer tables behind the sampler), `randomness` (integer random
sources: seeded, OS entropy, record/replay) and `timing` (the sampler's timing side channel and
the fixed release deadline).

May import: `core/` and `channel/` (and numpy, a kernel dependency, for the exact tables).
"""
