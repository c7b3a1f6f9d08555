"""The core layer (ARCHITECTURE.md)."""
