"""Model runtimes behind small interfaces. Every heavy import happens inside the backend that needs it."""
