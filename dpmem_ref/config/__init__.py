"""Interface descriptions (TOML) -> kernel objects (floor 8, above the kernel proper):
`load` (the loader: `load_interface_file`, `interface_from_dict`, `InterfaceFile`), `fields`
(the field readers it shares with the agent runtime's settings), `registry` (ONE registry of
parts: a table per kind, each row (name, factory, own keys); the loader and the evaluation pick
every part by name through it) and `toml_bounds` (the linear pre-scan of a TOML file before it
is parsed). The documented bounds themselves live on the ground floor (`dpmem_ref.core.limits`),
since the turn loop and the ledgers read them too.

May import: every floor up to `analysis/` (TOML files in, kernel objects out).
"""
