"""The persistent kernel cache: compiled fusions as artifacts on disk.

A FusionExecutorCache miss asks the disk cache before compiling, and stores
what it compiled (:mod:`fuser_mlir.executor`), so a second process never
recompiles what a first one compiled. Knobs (:mod:`fuser_mlir.config`):
``FUSER_CACHE=0`` turns it off, ``FUSER_CACHE_DIR`` moves it (default
``~/.cache/fuser-mlir``, created owner-only, 0o700), ``FUSER_CACHE_MAX_BYTES``
bounds it (default 1 GiB; least recently used entries go first).

Key (:func:`cache_key`): sha256 over the compiler version (release + a hash
of the package's sources, so any code change misses), the MLIR version, the
target (OS, architecture, ISA extensions for the CPU; the device for CUDA),
the definition's fingerprint, the hazard policy, and the executor key
(dtypes, stride orders, contiguity, broadcast dims, alignment classes, given
outputs). The fingerprint (``FusionDefinition.fingerprint``) hashes the
recorded program without source locations; it stands in for the hash of the
fuser IR, which is a deterministic function of it and of the compiler
sources (both in the key), because printing the fuser IR needs MLIR: a disk
hit then costs no MLIR import (about 130 ms). A hit's hazard report names
the source locations of the definition that was compiled.

Entries are ``.fsn`` artifacts (:mod:`fuser_mlir.runtime.artifact`) at
``<dir>/v1/<key[:2]>/<key>.fsn``, written to a temporary name and renamed
into place, so a reader sees a whole entry or none, and two processes that
compile one key at once both succeed (the last rename wins; both entries are
valid). Each manifest records its key. An entry that fails any artifact
check (corrupted; edited after it was stored, which the manifest's digest
shows; malformed: whatever loading it raises is an ArtifactError), whose
recorded key differs (a foreign file), or whose kernels this device cannot
load, is deleted with a :class:`~fuser_mlir.errors.CacheWarning` and the
fusion is compiled again.
A hit touches the entry's mtime; after a store, entries are evicted
oldest-mtime first until the cache fits its bound. Finding them walks the
directory (a stat an entry: about 10 ms a thousand entries), so a process
walks it at a store only where it has not in the last
:data:`WALK_INTERVAL_S`, or where what it stored since would take the
cache past its bound by its own count; processes storing at once may so
overshoot the bound by what the others store in that time.

Never imports ``mlir``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from fuser_mlir import config
from fuser_mlir.errors import ArtifactError, CacheWarning, FuserError
from fuser_mlir.runtime.artifact import (
    LoadedFusion,
    artifact_contents,
    compiler_version,
    key_to_json,
    mlir_version,
    read_artifact,
    remove_if_present,
    write_zip,
)
from fuser_mlir.runtime.plan import Runnable

LAYOUT = "v1"
SUFFIX = ".fsn"
#: Seconds a process trusts its last walk of a cache: within them a store walks it again (to evict)
#: only where the bytes the process stored since would take it past its bound.
WALK_INTERVAL_S = 60.0

#: Each cache's root -> (time.monotonic() of this process's last walk, the bytes it found, plus those stored since).
_walked: dict[Path, tuple[float, int]] = {}


def target_of(device: str) -> dict:
    """What compiled code depends on besides the fusion: the host CPU for
    ``cpu``; for CUDA the device and the requested architecture."""
    if device == "cpu":
        from fuser_mlir.runtime.cpu import host_target

        return {"backend": "cpu", **host_target()}
    arch = config.cuda_arch()
    try:
        from fuser_mlir.runtime.cuda import compute_capability

        _, _, index = device.partition(":")
        major, minor = compute_capability(int(index or 0))
        arch = arch or f"sm_{major}{minor}"
        device_arch = f"sm_{major}{minor}"
    except Exception:  # no driver here: the requested arch alone
        device_arch = None
    return {"backend": "cuda", "arch": arch, "device_arch": device_arch}


def cache_key(fingerprint: str, executor_key, hazard_policy: str) -> str:
    """The disk cache key of one compilation (hex sha256)."""
    parts = {
        "compiler": compiler_version(),
        "mlir": mlir_version(),
        "target": target_of(executor_key[0]),
        "fusion": fingerprint,
        "hazard_policy": hazard_policy,
        "executor_key": key_to_json(executor_key),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@dataclass
class DiskStats:
    """The cache directory's contents."""

    directory: str
    entries: int
    total_bytes: int
    max_bytes: int


class DiskCache:
    """A directory of artifacts addressed by :func:`cache_key`."""

    def __init__(self, directory: Path | str | None = None, max_bytes: int | None = None):
        self.directory = Path(directory) if directory is not None else config.cache_dir()
        self.max_bytes = max_bytes if max_bytes is not None else config.cache_max_bytes()
        self.root = self.directory / LAYOUT

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{SUFFIX}"

    def _ensure(self, directory: Path) -> None:
        """Create ``directory`` (and the cache directory) owner-only."""
        for level in (self.directory, self.root, directory):
            level.mkdir(mode=0o700, parents=True, exist_ok=True)

    # -- lookup and store ---------------------------------------------------------------

    def load(self, key: str, device: str) -> LoadedFusion | None:
        """The fusion stored under ``key``, ready to run on ``device``; None on
        a miss. A bad entry is deleted, with a CacheWarning."""
        path = self.path(key)
        try:
            manifest, files = read_artifact(path)
            if manifest.get("cache_key") != key:
                raise ArtifactError(f"cache key check failed: {path} records key {manifest.get('cache_key')!r}, not its file name's (a foreign entry)")
            loaded = LoadedFusion.from_manifest(manifest, files, device=device, where=str(path))
        except (FuserError, OSError) as err:  # a failed check (a malformed manifest's every error is one), or kernels this device cannot load
            if not path.exists():
                return None  # a miss (or evicted while we looked)
            try:
                remove_if_present(path)
                what = "discarding a bad entry"
            except OSError as why:  # a read-only cache, a directory in its place: compile, and keep going
                what = f"a bad entry that cannot be deleted ({why.strerror or why})"
            warnings.warn(f"fuser-mlir disk cache: {what}, compiling again: {err}", CacheWarning, stacklevel=3)
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        # what fd.compile hands back: its errors speak of the fusion, as a freshly compiled one's do
        loaded.described_as, loaded.other_signature_hint = Runnable.described_as, Runnable.other_signature_hint
        return loaded

    def store(self, key: str, compiled) -> Path | None:
        """Write ``compiled`` under ``key`` (atomically); None, with a
        CacheWarning, when it cannot be written."""
        path = self.path(key)
        try:
            manifest, files = artifact_contents(compiled, {"cache_key": key})
            self._ensure(path.parent)
            write_zip(path, manifest, files, private=True)
        except (ArtifactError, OSError) as err:
            why = self.not_a_directory() or err
            warnings.warn(f"fuser-mlir disk cache: cannot store {compiled.name!r} in {self.directory}: {why}", CacheWarning, stacklevel=3)
            return None
        self._evict_after_store(path)
        return path

    def _evict_after_store(self, path: Path) -> None:
        """:meth:`evict`, unless this process walked the cache within
        :data:`WALK_INTERVAL_S` and counts it, with ``path`` just stored, within its bound."""
        when, total = _walked.get(self.root, (None, 0))
        try:
            total += path.stat().st_size
        except OSError:
            when = None  # evicted by another process already: walk
        if when is not None and time.monotonic() - when < WALK_INTERVAL_S and total <= self.max_bytes:
            _walked[self.root] = (when, total)
        else:
            self.evict()

    def not_a_directory(self) -> str | None:
        """What to say when the cache directory, or a level under it, is a
        file (``FUSER_CACHE_DIR`` naming one): None when none is."""
        for place in (self.root, *self.root.parents):  # the cache directory is one of them
            if place.exists() and not place.is_dir():
                return f"{place} is a file, not a directory; set FUSER_CACHE_DIR to a directory (or FUSER_CACHE=0 to turn the cache off)"
        return None

    # -- size --------------------------------------------------------------------------

    def entries(self) -> list[tuple[Path, int, float]]:
        """``(path, size, mtime)`` of every entry."""
        found = []
        if not self.root.is_dir():
            return found
        for path in self.root.glob(f"*/*{SUFFIX}"):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            found.append((path, st.st_size, st.st_mtime))
        return found

    def evict(self) -> int:
        """Delete least recently used entries until the cache fits ``max_bytes``
        (and temporary files that a killed writer left, after an hour); how many entries went."""
        walked = time.monotonic()
        self._remove_stale_temporaries()
        entries = sorted(self.entries(), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        removed = 0
        for path, size, _ in entries:
            if total <= self.max_bytes:
                break
            remove_if_present(path)
            total -= size
            removed += 1
        _walked[self.root] = (walked, total)
        return removed

    def _remove_stale_temporaries(self, age_s: float = 3600.0) -> None:
        if not self.root.is_dir():
            return
        limit = time.time() - age_s
        for path in self.root.glob("*/.*.tmp"):
            try:
                if path.stat().st_mtime < limit:
                    remove_if_present(path)
            except FileNotFoundError:
                continue

    def stats(self) -> DiskStats:
        entries = self.entries()
        return DiskStats(str(self.directory), len(entries), sum(size for _, size, _ in entries), self.max_bytes)

    def clear(self) -> int:
        """Delete every entry (and stray temporary files); how many entries went."""
        _walked.pop(self.root, None)
        count = 0
        if not self.root.is_dir():
            return 0
        for path in self.root.glob("*/*"):
            if path.is_file():
                count += path.suffix == SUFFIX
                remove_if_present(path)
        return count


def default_cache() -> DiskCache | None:
    """The cache the executor uses, or None when ``FUSER_CACHE=0``."""
    if not config.cache_enabled():
        return None
    return DiskCache()
