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


def benchmeasure_command(root, *args):
    """Run ``python -m benchmeasure ARGS`` in ``root`` (the real command line); exit with its stderr unless it ends
    with 0 or 3 (3: finished with a convergence warning)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmeasure", *map(str, args)], capture_output=True, text=True,
                          cwd=root)
    if done.returncode not in (0, 3):
        raise SystemExit(f"benchmeasure {' '.join(map(str, args))} failed:\n{done.stderr}")
    return done

