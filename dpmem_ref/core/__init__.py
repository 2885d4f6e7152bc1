"""The ground floor of the kernel (stdlib + attrs only; nothing here imports from above):
`errors` (bad input, and a breach of Definition 1 as one concept: `Violation` reported,
`ContractViolation` raised), `rational` (parsing and printing exact rationals), `transcript`
(queries, reads, turn records, the public prefix), `ledgers` (exact integer ledgers), `policy`
(layout, attributes, groups, caps, store), `views` (vocabularies), `memo` and `limits` (the
documented bounds on the work any input can cause).

May import: the standard library and attrs only (the floor everything stands on).
"""
