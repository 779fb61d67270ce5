"""The stomach's pure core: a paste in, its goal, anchors, budgeted frames and report out.

Synchronous and deterministic, it reads no clock and no environment and does no I/O (no bus, no process,
no socket): the architecture test holds every module under this folder to that. ``blocks`` cuts a paste
into segments and picks the goal, ``classify`` names each block's kind, ``shapes`` holds the line shapes
both read, ``distill`` renders each kind; ``ingest`` runs the phases, ``budget`` shares the tokens out,
``tuning`` holds every number. The I/O shell beside it (``organs.stomach.worker``, ``frames_store``,
``large``, ``raw``) stores, fetches and runs it.
"""

__all__: list[str] = []
