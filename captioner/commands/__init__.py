"""One module per `captioner` subcommand, each with ``register(subparsers)``."""
