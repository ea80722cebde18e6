"""spades_server: the spades.v1 gRPC service around the ``spades_engine`` library."""
