"""The analyses layer (ARCHITECTURE.md)."""
