"""A paste cut into blocks, placed back in the received text, classified into segments, and its goal picked."""

__all__: list[str] = []
