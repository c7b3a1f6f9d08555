"""The base layer (ARCHITECTURE.md)."""
