"""The typed config schemas and the checks their types cannot express. No Hydra here: the CLI registers them."""
