"""The exponential mechanism (floor 2, above `dpmem_ref.core`): `em` (the exact description of
a release distribution, its likelihoods and its exact sampler, Eq. 7), `em_sampler` (the exact
integer tables behind the sampler), `randomness` (integer random sources: seeded, OS entropy,
record/replay) and `timing` (the sampler's timing side channel and the fixed release deadline)."""
