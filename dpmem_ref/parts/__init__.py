"""The parts of Algorithm 1 an interface is assembled from (floor 3, above `core` and
`mechanism`): every part behind its protocol, budget rules (`budget`) and scorers (`scoring`)
included.

`protocols` declares what each part is and the capabilities it must state (what it reads,
which condition it breaks); `routers`, `selectors`, `caps` and `controls` hold the
contract-abiding parts; `broken` holds the deliberately contract-breaking variants that
counterexamples and audits run through the same engine (the strict kernel refuses them).

May import: `core/`, `channel/` and `mechanism/`.
"""
