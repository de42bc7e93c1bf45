"""Results and findings -> what people read: text, JSON, tables, figures (formats.py), streamed
files (stream.py), the live table (follow.py) and the commands (cli.py, check_cli.py)."""
