"""The pure core: items, prompts, reply parsing, the verdict rule, call records, errors. No I/O, no Hydra."""
