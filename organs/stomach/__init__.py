"""The stomach: a pure ingestion core that digests a paste into a goal, anchors and budgeted frames."""

from organs.stomach.core.ingest import ContextQuery, IngestBundle, IngestConfig, IngestProvider, ingest_paste

__all__ = ["ContextQuery", "IngestBundle", "IngestConfig", "IngestProvider", "ingest_paste"]
