"""perfpost: reproducible storage benchmarks, from a config matrix to a blog-ready post."""

__version__ = "0.1.0"
