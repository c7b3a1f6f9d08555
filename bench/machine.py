"""What a benchmark report says about the machine it ran on: CPU model and package versions."""

from __future__ import annotations


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (Linux), else "unknown CPU"."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def versions(names: list[str]) -> str:
    """``"pymc 6.x, nutpie 0.y, ..."`` for the installed versions of ``names`` (those not installed left out)."""
    from benchmeasure.base.files import package_versions

    found = package_versions(names)
    return ", ".join(f"{name} {found[name]}" for name in names if found[name] is not None)
