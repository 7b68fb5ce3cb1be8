"""Command-line layer: one module per subcommand, no numerics here."""
