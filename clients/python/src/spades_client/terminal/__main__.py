"""``python -m spades_client.terminal`` is the ``spades`` command."""

from . import entry_point

entry_point()
