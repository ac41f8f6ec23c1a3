"""Server binaries from other Debian suites, each in a minimal root filesystem of its own.

A `rootfs` flavour (env/servers/<name>.toml with `source = "rootfs"`) names a Debian suite
and the packages to install there. `provision` builds that tree once with mmdebstrap from the
same Debian package registry the host's apt uses, keeps it as a tarball under data/rootfs/
keyed by a hash of its definition (with a .sha256 beside it, verified whenever the tree is
extracted again), and extracts it next to the tarball; `launch.prefix` runs its programs.

Why a rootfs: the other suites' server binaries need a newer glibc than the host's, and
MySQL's and MariaDB's server packages conflict, so one tree per flavour.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterable, Protocol

from ..core import paths, proc
from ..core.errors import ServerError


class Flavour(Protocol):
    """What the rootfs and the launcher read of a flavour (`flavour.Flavour` has it; they sit
    below it, so they name only this)."""
    name: str
    source: str
    server: str
    suite: str
    packages: tuple[str, ...]
    path: str                            # a directory flavour's folder …
    runtime_flavour: "Flavour | None"    # … and the rootfs flavour it runs in

ROOTFS_DIR = paths.DATA_DIR / "rootfs"
VARIANT = "essential"  # + the flavour's packages: a shell and coreutils for the install scripts
RECIPE = 1             # bump when the way a tree is built changes (it is part of the key)
TOOLS = {"mmdebstrap": "mmdebstrap", "bwrap": "bubblewrap", "zstd": "zstd"}  # binary → package
APT_OPTIONS = ('Acquire::Check-Valid-Until "false"', 'Acquire::Check-Date "false"')
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def key(flavour: "Flavour") -> str:
    """A short hash of everything that decides the tree's contents."""
    spec = {"suite": flavour.suite, "packages": sorted(flavour.packages), "variant": VARIANT,
            "recipe": RECIPE}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def tarball(flavour: "Flavour", root: Path = ROOTFS_DIR) -> Path:
    return Path(root) / f"{flavour.name}-{key(flavour)}.tar.zst"


def tree(flavour: "Flavour", root: Path = ROOTFS_DIR) -> Path:
    return Path(root) / f"{flavour.name}-{key(flavour)}"


def is_provisioned(flavour: "Flavour", root: Path = ROOTFS_DIR) -> bool:
    return (tree(flavour, root) / ".dbstudies-complete").exists()


def missing_tools() -> list[str]:
    """The apt packages of the tools provisioning and launching need that are not installed."""
    return [pkg for binary, pkg in TOOLS.items() if shutil.which(binary) is None]


def mirror(sources: Iterable[Path] = (Path("/etc/apt/sources.list.d/debian.sources"),
                                      Path("/etc/apt/sources.list"))) -> str:
    """The Debian archive the host's apt uses (the URI whose path ends in /debian)."""
    for path in sources:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for uri in re.findall(r"(?m)^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text):
            if uri.rstrip("/").endswith("/debian"):
                return uri.rstrip("/")
    raise ServerError("cannot find the Debian archive in the host's apt sources "
                      "(/etc/apt/sources.list.d/debian.sources)")


sha256 = paths.sha256


def provision(flavour: "Flavour", root: Path = ROOTFS_DIR,
              say: Callable[[str], None] = print) -> Path:
    """The flavour's tree, ready to run: built (mmdebstrap) and/or extracted as needed."""
    if is_provisioned(flavour, root):
        return tree(flavour, root)
    if missing_tools():
        raise ServerError(f"flavour {flavour.name} runs in its own rootfs and needs "
                          f"{', '.join(missing_tools())} (`make setup` installs them)")
    tar = tarball(flavour, root)
    if not tar.exists():
        build(flavour, tar, say)
    verify(tar)
    return extract(flavour, tar, root, say)


def build(flavour: "Flavour", tar: Path, say: Callable[[str], None] = print) -> None:
    """mmdebstrap the tree into `tar` (+ `tar`.sha256); nothing is left on failure."""
    tar.parent.mkdir(parents=True, exist_ok=True)
    part = tar.with_name(tar.name + ".part")
    argv = ["mmdebstrap", f"--variant={VARIANT}", "--quiet",
            f"--include={','.join(flavour.packages)}",
            *[f"--aptopt={o}" for o in APT_OPTIONS],
            "--format=tar", flavour.suite, "-", f"deb {mirror()} {flavour.suite} main"]
    say(f"provisioning {flavour.name}: Debian {flavour.suite}, {', '.join(flavour.packages)} "
        f"(once; cached as {tar.name})")
    t0 = time.monotonic()
    try:
        with open(part, "wb") as out:
            mm = proc.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            zs = proc.spawn(["zstd", "-q", "-T0", "-6", "-c"], stdin=mm.stdout, stdout=out)
            mm.stdout.close()
            try:
                err = mm.stderr.read().decode(errors="replace")
            except BaseException:
                proc.kill(mm)
                proc.kill(zs)
                raise
            if mm.wait() != 0 or zs.wait() != 0:
                raise ServerError(f"provisioning {flavour.name} failed (mmdebstrap exit "
                                  f"{mm.returncode}):\n" + "\n".join(err.splitlines()[-15:]))
        os.replace(part, tar)
    finally:
        part.unlink(missing_ok=True)
    tar.with_name(tar.name + ".sha256").write_text(f"{sha256(tar)}  {tar.name}\n")
    say(f"provisioned {flavour.name} in {time.monotonic() - t0:.0f} s "
        f"({tar.stat().st_size / 2**20:.0f} MiB)")


def verify(tar: Path) -> None:
    """The tarball matches the checksum written when it was built."""
    sums = tar.with_name(tar.name + ".sha256")
    try:
        expected = sums.read_text().split()[0]
    except (OSError, IndexError):
        raise ServerError(f"{tar} has no checksum ({sums.name}): delete it; the next use "
                          "provisions it again") from None
    if sha256(tar) != expected:
        raise ServerError(f"{tar} is corrupt (its SHA-256 differs from {sums.name}): delete "
                          "both files; the next use provisions the flavour again")


def extract(flavour: "Flavour", tar: Path, root: Path = ROOTFS_DIR,
            say: Callable[[str], None] = print) -> Path:
    """Unpack the tarball into the flavour's tree (atomically: a partial tree is never used)."""
    dest = tree(flavour, root)
    part = dest.with_name(dest.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    part.mkdir(parents=True)
    try:
        proc.run(["tar", "--zstd", "-xf", str(tar), "-C", str(part), "--exclude=./dev/*",
                  "--no-same-owner"], timeout=1800)
    except proc.ProcError as e:
        shutil.rmtree(part, ignore_errors=True)
        raise ServerError(f"cannot extract {tar}: {e.stderr_tail[-500:]}") from None
    (part / "etc" / "hosts").write_text(HOSTS)
    (part / ".dbstudies-complete").write_text(tar.name + "\n")
    os.replace(part, dest)
    return dest


def disk_usage(flavour: "Flavour", root: Path = ROOTFS_DIR) -> int:
    """Bytes the flavour's tarball and tree take."""
    total = 0
    for p in (tarball(flavour, root), tree(flavour, root)):
        if p.exists():
            total += paths.disk_usage(p) if p.is_dir() else p.stat().st_size
    return total
