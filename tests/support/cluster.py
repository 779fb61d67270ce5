"""A JetStream cluster of embedded servers, for the fault tests that lose a node."""

from __future__ import annotations

from pathlib import Path

from organs.errors import EmbeddedServerError
from organs.runtime.server import EmbeddedServer, free_port

__all__ = ["EmbeddedCluster"]

# A node's ports are chosen before it binds them (each node names the others' routes in its configuration), so
# another process can take one in between; the cluster then starts again on fresh ports.
START_ATTEMPTS = 3


class EmbeddedCluster:
    """Several embedded servers joined by routes into one JetStream cluster.

    Each node has its own data directory and client port; ``url`` lists every
    node so a client fails over when one dies. Streams created with replicas
    equal to the node count survive the loss of one node.
    """

    def __init__(self, data_dir: str | Path, *, nodes: int = 3, name: str = "ichor", host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir)
        self.nodes, self.name, self.host = nodes, name, host
        self.servers = self._planned()

    def _planned(self) -> list[EmbeddedServer]:
        host, name = self.host, self.name
        route_ports = [free_port(host) for _ in range(self.nodes)]
        routes = ", ".join(f"nats-route://{host}:{port}" for port in route_ports)
        return [
            EmbeddedServer(
                self.data_dir / f"n{index}",
                port=free_port(host),
                host=host,
                server_name=f"{name}-n{index}",
                extra_config=(f"cluster {{\n  name: {name}\n  listen: {host}:{route_port}\n  routes: [{routes}]\n}}\n"),
            )
            for index, route_port in enumerate(route_ports)
        ]

    @property
    def url(self) -> str:
        return ",".join(server.url for server in self.servers)

    def start(self) -> EmbeddedCluster:
        for _ in range(START_ATTEMPTS - 1):
            try:
                return self._start_nodes()
            except EmbeddedServerError as error:
                if "address already in use" not in str(error):
                    raise
                self.servers = self._planned()
        return self._start_nodes()

    def _start_nodes(self) -> EmbeddedCluster:
        try:
            for server in self.servers:
                server.start()
        except EmbeddedServerError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
