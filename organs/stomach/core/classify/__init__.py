"""The classification ladder (``ladder``) and its rungs (``rungs``, ``table_rungs``, ``text_rungs``): each block's
kind, with the reason."""

__all__: list[str] = []
