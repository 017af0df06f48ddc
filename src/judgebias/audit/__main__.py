"""`python -m judgebias.audit`: the command (audit/command.py), with Ctrl-C at any moment one line and exit 130.

Everything is imported inside the guard, so an interrupt while the command is still starting is said the same way;
the audit's writes are atomic, so an interrupt leaves no half-written file (and no temporary one).
"""

import sys

EXIT_INTERRUPTED = 130

if __name__ == "__main__":
    try:
        from judgebias.audit.command import main

        sys.exit(main())
    except KeyboardInterrupt:
        print(
            "\njudgebias: interrupted: the audit stopped before it finished; run the same command again",
            file=sys.stderr,
        )
        sys.exit(EXIT_INTERRUPTED)
