"""Auditing judge runs made with other tools (FastChat, Arena-Hard-Auto, AlpacaEval): their files read strictly,
replayed through judgebias, and set beside the figures the tools themselves report (`python -m judgebias.audit`)."""
