"""How a command's process starts and ends: Ctrl-C before the work begins, a user's mistake in one line, exit codes.

Imported first by every command (before Hydra, the SDK or numpy), so it imports nothing but the standard library
and core's errors.
"""
