"""Line shapes the classifier and the distillers share: levels and alerts, traces, tool output, clocks."""

__all__: list[str] = []
