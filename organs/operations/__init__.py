"""Operating the tract: credentials and permissions for ``--secure``, the ``ichor up`` supervisor.

It sits above the organs (it spawns them and writes their users' rules) and below the command line.
"""
