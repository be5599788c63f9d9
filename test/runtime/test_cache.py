"""The persistent kernel cache: a second process never recompiles, bad
entries are rebuilt with a warning, concurrent writers both succeed, and
the cache stays within its size bound."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fuser_mlir import DataType, FusionDefinition
from fuser_mlir.errors import CacheWarning, ConfigWarning, InputError
from fuser_mlir.runtime.artifact import DIGEST, MANIFEST, LoadedFusion, manifest_digest
from fuser_mlir.runtime import cache as cache_module
from fuser_mlir.runtime.cache import DiskCache
from devices import subprocess_env
from reference import evaluate

REPO = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(9)

# A script that defines a 10-op pointwise fusion, runs it on fresh data,
# checks it against float64 NumPy and prints the executor's stats. With
# FORBID_COMPILE=1 compiling raises, so a hit must come from the disk.
SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    from fuser_mlir import DataType, FusionDefinition
    if os.environ.get("FORBID_COMPILE") == "1":
        import fuser_mlir.compiler
        def refuse(*args, **kwargs):
            raise SystemExit("this process must not compile")
        fuser_mlir.compiler.compile_fusion = refuse
    if os.environ.get("WAIT_FOR"):
        while not os.path.exists(os.environ["WAIT_FOR"]):
            time.sleep(0.001)
    with FusionDefinition(name="chain") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t = fd.ops.exp(x * 0.5) + y
        t = fd.ops.tanh(t) * 3.0 - fd.ops.abs(y)
        t = fd.ops.sqrt(fd.ops.abs(t) + 1.0) / (y * y + 2.0)
        fd.add_output(t)
    rng = np.random.default_rng()
    x, y = rng.standard_normal((33, 17)).astype(np.float32), rng.standard_normal((33, 17)).astype(np.float32)
    if os.environ.get("DEVICE") == "cuda":
        from fuser_mlir.runtime.arrays import DeviceArray
        (out,) = fd.execute([DeviceArray.from_numpy(x), DeviceArray.from_numpy(y)])
        out = out.numpy()
    else:
        (out,) = fd.execute([x, y])
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    ref = np.sqrt(np.abs(np.tanh(np.exp(xd * 0.5) + yd) * 3.0 - np.abs(yd)) + 1.0) / (yd * yd + 2.0)
    assert np.allclose(out, ref, rtol=1e-5, atol=1e-6), float(np.max(np.abs(out - ref)))
    s = fd._executor.stats
    print(f"compilations={s.compilations} disk_hits={s.disk_hits} disk_writes={s.disk_writes}")
    """
)


def run_script(cache_dir: Path, **env_vars) -> str:
    env = subprocess_env(REPO, FUSER_CACHE_DIR=str(cache_dir), **env_vars)
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "v1").glob("*/*.fsn"))


def test_a_second_process_runs_from_the_disk_cache_without_compiling(tmp_path):
    cache_dir = tmp_path / "cache"
    assert run_script(cache_dir) == "compilations=1 disk_hits=0 disk_writes=1"
    assert len(entries(cache_dir)) == 1
    assert run_script(cache_dir, FORBID_COMPILE="1") == "compilations=0 disk_hits=1 disk_writes=0"


@pytest.mark.gpu
def test_a_second_process_runs_cuda_kernels_from_the_disk_cache_without_compiling(tmp_path, cuda):
    cache_dir = tmp_path / "cache"
    assert run_script(cache_dir, DEVICE="cuda") == "compilations=1 disk_hits=0 disk_writes=1"
    assert run_script(cache_dir, DEVICE="cuda", FORBID_COMPILE="1") == "compilations=0 disk_hits=1 disk_writes=0"


def test_the_cache_directory_is_owner_only(tmp_path):
    cache_dir = tmp_path / "new" / "cache"
    run_script(cache_dir)
    for directory in (cache_dir, cache_dir / "v1", entries(cache_dir)[0].parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE(entries(cache_dir)[0].stat().st_mode) == 0o600


def test_FUSER_CACHE_0_neither_reads_nor_writes(tmp_path):
    cache_dir = tmp_path / "cache"
    assert run_script(cache_dir, FUSER_CACHE="0") == "compilations=1 disk_hits=0 disk_writes=0"
    assert not cache_dir.exists()


def corrupt_flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))


def corrupt_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


def corrupt_empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("corrupt", [corrupt_flip, corrupt_truncate, corrupt_empty])
def test_a_corrupted_entry_is_discarded_with_a_warning_and_rebuilt(tmp_path, corrupt):
    cache_dir = tmp_path / "cache"
    run_script(cache_dir)
    (entry,) = entries(cache_dir)
    corrupt(entry)
    env = subprocess_env(REPO, FUSER_CACHE_DIR=str(cache_dir))
    result = subprocess.run([sys.executable, "-W", "always", "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "compilations=1 disk_hits=0 disk_writes=1"
    assert "CacheWarning: fuser-mlir disk cache: discarding a bad entry, compiling again" in result.stderr
    assert run_script(cache_dir, FORBID_COMPILE="1") == "compilations=0 disk_hits=1 disk_writes=0"


def test_a_bad_entry_that_cannot_be_deleted_is_compiled_past_with_a_warning(tmp_path, monkeypatch):
    # In a read-only cache (or with a directory in the entry's place) the failed delete raised out of
    # fd.execute, on every call of every process.
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    small_fusion().execute([rand(2, 3)])
    (entry,) = entries(tmp_path)
    corrupt_truncate(entry)
    kept = entry.read_bytes()

    def read_only(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(cache_module, "remove_if_present", read_only)
    monkeypatch.setattr(cache_module.DiskCache, "store", lambda self, key, compiled: None)  # nor written, as read-only
    for _ in range(2):  # a fresh fusion each time: the disk entry is looked up again
        fd, x = small_fusion(), rand(3, 4)
        with pytest.warns(CacheWarning, match=r"a bad entry that cannot be deleted \(Permission denied\), compiling again"):
            (out,) = fd.execute([x])
        np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) * 2.0, rtol=1e-6)
    assert entry.read_bytes() == kept


def rewrite_manifest(entry: Path, change, *, seal: bool) -> None:
    """Change the manifest inside a cache entry; ``seal`` writes its digest anew, as a store would."""
    with zipfile.ZipFile(entry) as z:
        files = {info.filename: z.read(info) for info in z.infolist()}
    manifest = json.loads(files[MANIFEST])
    change(manifest)
    if seal:
        manifest[DIGEST] = manifest_digest(manifest)
    files[MANIFEST] = json.dumps(manifest).encode()
    with zipfile.ZipFile(entry, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)


@pytest.mark.parametrize(
    "seal, reason", [(False, r"manifest.json was edited or damaged after export"), (True, r'image.target is "linux", not an object')],
    ids=["unsealed", "sealed"],
)
def test_an_entry_with_a_malformed_manifest_is_discarded_with_a_warning_and_rebuilt(tmp_path, monkeypatch, seal, reason):
    # image.target a string raised AttributeError out of every fd.execute of the fusion, and the entry stayed.
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    small_fusion().execute([rand(2, 3)])
    (entry,) = entries(tmp_path)
    rewrite_manifest(entry, lambda m: m["image"].update(target="linux"), seal=seal)
    fd, x = small_fusion(), rand(3, 4)
    with pytest.warns(CacheWarning, match=rf"discarding a bad entry, compiling again: .*{re.escape(str(entry))}.*{reason}"):
        (out,) = fd.execute([x])
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) * 2.0, rtol=1e-6)
    assert (fd._executor.stats.compilations, fd._executor.stats.disk_writes) == (1, 1)
    again, y = small_fusion(), rand(5, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        (out,) = again.execute([y])  # from the entry stored anew
    np.testing.assert_allclose(out, np.exp(y.astype(np.float64)) * 2.0, rtol=1e-6)
    assert again._executor.stats.disk_hits == 1


@pytest.mark.parametrize("error", [AttributeError, TypeError, KeyError, IndexError, ValueError])
def test_an_entry_whose_load_raises_an_unforeseen_error_is_discarded_and_rebuilt(tmp_path, monkeypatch, error):
    """Whatever a malformed entry raises past every check while it loads
    makes it a bad entry (an ArtifactError with the exception's type and
    text), not an error of every call."""
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    small_fusion().execute([rand(2, 3)])

    def unforeseen(raw):
        raise error("an unforeseen field")

    from fuser_mlir.runtime.signature import FusionSignature

    fd, x = small_fusion(), rand(3, 4)
    with monkeypatch.context() as patch:
        patch.setattr(FusionSignature, "from_json", staticmethod(unforeseen))
        with pytest.warns(CacheWarning, match=rf"discarding a bad entry, compiling again: manifest check failed: .*: the manifest is "
                                              rf"incomplete or malformed \({error.__name__}: '?an unforeseen field'?\)"):
            (out,) = fd.execute([x])
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) * 2.0, rtol=1e-6)
    assert (fd._executor.stats.compilations, fd._executor.stats.disk_hits) == (1, 0)


@pytest.mark.parametrize(
    "raw, expected",
    [("123", 123), ("64K", 64 << 10), ("512m", 512 << 20), ("2GiB", 2 << 30), (" 1 GB ", 1 << 30), ("1t", 1 << 40)],
)
def test_the_cache_bound_takes_bytes_or_a_unit(monkeypatch, raw, expected):
    # "1G" raised ValueError from every fd.execute.
    monkeypatch.setenv("FUSER_CACHE_MAX_BYTES", raw)
    assert DiskCache().max_bytes == expected


@pytest.mark.parametrize("raw", ["1.5G", "-3", "lots", "1GG"])
def test_a_cache_bound_it_cannot_read_warns_and_the_default_holds(tmp_path, monkeypatch, raw):
    monkeypatch.setenv("FUSER_CACHE_MAX_BYTES", raw)
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    with pytest.warns(ConfigWarning, match=rf"FUSER_CACHE_MAX_BYTES must be a number of bytes, .*; got '{re.escape(raw)}', so the cache"):
        assert DiskCache().max_bytes == 1 << 30
    x = rand(2, 3)
    with pytest.warns(ConfigWarning):
        (out,) = small_fusion().execute([x])  # the fusion runs, and is stored
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) * 2.0, rtol=1e-6)
    assert len(entries(tmp_path)) == 1


def test_a_foreign_entry_under_another_key_is_discarded(tmp_path):
    """An entry copied under another entry's name (valid artifact, wrong key) is not used."""
    cache_dir = tmp_path / "cache"
    run_script(cache_dir)
    (entry,) = entries(cache_dir)
    fd = small_fusion()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FUSER_CACHE_DIR", str(cache_dir))
        fd.execute([rand(3, 4)])
        other = [e for e in entries(cache_dir) if e != entry]
        assert len(other) == 1
        other[0].write_bytes(entry.read_bytes())
        fresh = small_fusion()
        with pytest.warns(CacheWarning, match=r"cache key check failed: .* \(a foreign entry\)"):
            x = rand(3, 4)
            (out,) = fresh.execute([x])
        np.testing.assert_allclose(out, evaluate(fresh, [x])[0], rtol=1e-6)
        assert fresh._executor.stats.compilations == 1 and fresh._executor.stats.disk_writes == 1


def test_two_processes_compiling_one_key_at_once_both_succeed(tmp_path):
    cache_dir = tmp_path / "cache"
    go = tmp_path / "go"
    env = subprocess_env(REPO, FUSER_CACHE_DIR=str(cache_dir), WAIT_FOR=str(go))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    time.sleep(1.0)  # let them import
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "CacheWarning" not in err
        assert out.strip().startswith(("compilations=1 disk_hits=0", "compilations=0 disk_hits=1"))
    assert len(entries(cache_dir)) == 1
    assert not [p for p in (cache_dir / "v1").glob("*/*") if p.suffix != ".fsn"]  # no temporary files left
    assert run_script(cache_dir, FORBID_COMPILE="1") == "compilations=0 disk_hits=1 disk_writes=0"


# -- in-process behaviour ------------------------------------------------------------------


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def small_fusion(op: str = "exp") -> FusionDefinition:
    with FusionDefinition(name="small") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(getattr(fd.ops, op)(x) * 2.0)
    return fd


def test_a_hit_from_disk_is_a_loaded_fusion_and_counts_as_a_disk_hit(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    first = small_fusion()
    first.execute([rand(2, 3)])
    assert (first._executor.stats.compilations, first._executor.stats.disk_hits) == (1, 0)
    second = small_fusion()  # same definition, another object (and another source line)
    x = rand(5, 7)
    (out,) = second.execute([x])
    np.testing.assert_allclose(out, evaluate(second, [x])[0], rtol=1e-6)
    stats = second._executor.stats
    assert (stats.compilations, stats.disk_hits, stats.misses) == (0, 1, 1)
    from_disk = second.compile([x])
    assert isinstance(from_disk, LoadedFusion)
    second.execute([rand(4, 4)])
    assert second._executor.stats.hits >= 1 and second._executor.stats.disk_hits == 1
    # fd.compile's result speaks of the fusion, not of an artifact the user never exported
    with pytest.raises(InputError, match="the signature fusion 'small' was compiled for: input 0 has stride order .* "
                                         "fd.execute compiles the fusion again"):
        from_disk.run([rand(3, 2).T])


def test_the_ptx_of_a_fusion_that_keeps_no_program_is_its_image_s(tmp_path, monkeypatch):
    # A fusion from the disk cache (or an artifact) keeps no program: compiled.program.ptx, which the README
    # named, raised AttributeError on 'NoneType' in every process after the first. compiled.ptx reads the
    # image's PTX there. Compiled for the GPU without one (PTX needs none); the GPU test below loads it.
    from dataclasses import replace

    from fuser_mlir.compiler import compile_fusion

    fd = affine_fusion()
    compiled = compile_fusion(fd, device="cuda:0")
    assert ".entry " in compiled.ptx and compiled.ptx == compiled.program.ptx
    assert replace(compiled, program=None).ptx == compiled.ptx  # what a LoadedFusion holds: its image
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    affine_fusion().execute([rand(2, 3)])
    from_disk = affine_fusion().compile([rand(2, 3)])
    assert isinstance(from_disk, LoadedFusion) and from_disk.program is None
    for cpu in (compile_fusion(fd), from_disk):
        with pytest.raises(AttributeError, match=r"this fusion was compiled for cpu, so it has no PTX, which only a fusion "
                                                 r"compiled for a CUDA device \(device='cuda:N', or CUDA arrays\) has; its kernels are in .ir\('cpu'\)"):
            cpu.ptx


@pytest.mark.gpu
def test_the_ptx_of_a_cuda_fusion_from_the_disk_cache_is_the_ptx_compiled(tmp_path, monkeypatch, cuda):
    from fuser_mlir.runtime.arrays import DeviceArray

    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    x = DeviceArray.from_numpy(rand(2, 3))
    compiled = affine_fusion().compile([x])
    from_disk = affine_fusion().compile([x])
    assert isinstance(from_disk, LoadedFusion) and from_disk.program is None
    assert ".entry " in from_disk.ptx and from_disk.ptx == compiled.ptx


def affine_fusion():
    with FusionDefinition(name="affine") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(x * 2.0 + 1.0)
    return fd


def test_another_definition_or_signature_or_policy_misses(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    small_fusion("exp").execute([rand(2, 3)])
    other_op = small_fusion("tanh")
    x = rand(2, 3)
    (out,) = other_op.execute([x])
    np.testing.assert_allclose(out, np.tanh(x.astype(np.float64)) * 2.0, rtol=1e-6)
    assert other_op._executor.stats.disk_hits == 0
    other_signature = small_fusion("exp")
    other_signature.execute([rand(2, 6)[:, ::2]])  # strided (a transposed array would run as a row-major view of itself)
    assert other_signature._executor.stats.disk_hits == 0
    from fuser_mlir import FusionExecutorCache

    copy_policy = FusionExecutorCache(small_fusion("exp"), hazard_policy="copy")
    copy_policy.run([rand(2, 3)])
    assert copy_policy.stats.disk_hits == 0
    assert len(entries(tmp_path)) == 4


def test_lru_eviction_keeps_the_cache_within_its_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    ops = ["exp", "tanh", "sin", "cos"]
    for op in ops[:3]:
        small_fusion(op).execute([rand(2, 3)])
    paths = entries(tmp_path)
    assert len(paths) == 3
    size = max(p.stat().st_size for p in paths)
    now = time.time()
    by_op = {}
    for op in ops[:3]:  # which entry is which: reload each, oldest first
        fd = small_fusion(op)
        fd.execute([rand(2, 3)])
        assert fd._executor.stats.disk_hits == 1
        by_op[op] = max(entries(tmp_path), key=lambda p: p.stat().st_mtime_ns)
        os.utime(by_op[op], (now - 100 + len(by_op), now - 100 + len(by_op)))
    os.utime(by_op["exp"], (now, now))  # exp used last
    monkeypatch.setenv("FUSER_CACHE_MAX_BYTES", str(3 * size + size // 2))
    small_fusion("cos").execute([rand(2, 3)])
    remaining = set(entries(tmp_path))
    assert by_op["tanh"] not in remaining  # the least recently used went
    assert by_op["exp"] in remaining and by_op["sin"] in remaining and len(remaining) == 3
    assert DiskCache().stats().total_bytes <= 3 * size + size // 2


def test_a_store_walks_the_cache_once_a_minute_or_where_it_would_pass_the_bound(tmp_path, monkeypatch):
    """Evicting walks every entry (a stat each), so a process walks at a
    store only where its last walk is older than WALK_INTERVAL_S, or where
    the bytes it stored since would take the cache past its bound."""
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    walks = []
    walk = DiskCache.entries
    monkeypatch.setattr(DiskCache, "entries", lambda self: walks.append(self.root) or walk(self))
    small_fusion("exp").execute([rand(2, 3)])
    assert len(walks) == 1  # the first store of this process
    small_fusion("tanh").execute([rand(2, 3)])
    assert len(walks) == 1 and len(entries(tmp_path)) == 2  # within the interval and the bound: no walk
    size = max(p.stat().st_size for p in entries(tmp_path))
    monkeypatch.setenv("FUSER_CACHE_MAX_BYTES", str(2 * size + size // 2))
    small_fusion("sin").execute([rand(2, 3)])
    assert len(walks) == 2 and len(entries(tmp_path)) == 2  # its own count passed the bound: walked, and the oldest went
    monkeypatch.setenv("FUSER_CACHE_MAX_BYTES", str(1 << 30))
    small_fusion("cos").execute([rand(2, 3)])
    assert len(walks) == 2
    monkeypatch.setattr(cache_module, "WALK_INTERVAL_S", 0.0)  # the last walk is older than the interval
    small_fusion("neg").execute([rand(2, 3)])
    assert len(walks) == 3 and len(entries(tmp_path)) == 4


def test_eviction_removes_temporaries_a_killed_writer_left(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    small_fusion("exp").execute([rand(2, 3)])
    folder = entries(tmp_path)[0].parent
    old, fresh = folder / ".x.fsn.old.tmp", folder / ".x.fsn.new.tmp"
    old.write_bytes(b"partial")
    fresh.write_bytes(b"being written")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    DiskCache().evict()
    assert not old.exists() and fresh.exists()


def test_stats_and_clear(tmp_path):
    cache = DiskCache(tmp_path / "c", max_bytes=1 << 20)
    assert cache.stats().entries == 0 and cache.clear() == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FUSER_CACHE_DIR", str(tmp_path / "c"))
        small_fusion().execute([rand(2, 2)])
    stats = cache.stats()
    assert stats.entries == 1 and stats.total_bytes == entries(tmp_path / "c")[0].stat().st_size
    assert cache.clear() == 1 and cache.stats().entries == 0


def test_an_unwritable_cache_warns_and_still_runs(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(blocker / "cache"))
    fd = small_fusion("sin")
    x = rand(2, 3)
    with pytest.warns(CacheWarning, match=rf"cannot store 'small' .*: {re.escape(str(blocker))} is a file, not a directory; "
                                          r"set FUSER_CACHE_DIR to a directory"):
        (out,) = fd.execute([x])
    np.testing.assert_allclose(out, np.sin(x.astype(np.float64)) * 2.0, rtol=1e-6)
    assert blocker.read_text() == "not a directory"


def _variant(kind: str) -> FusionDefinition:
    """A small fusion, changed in one respect per ``kind``."""
    with FusionDefinition(name="other" if kind == "name" else "v") as fd:
        shape = [-1, 4] if kind == "static" else [-1, -1]
        dtype = DataType.Double if kind == "dtype" else DataType.Float
        x = fd.define_tensor(shape=shape, dtype=dtype, contiguity=True if kind == "contiguity" else None)
        y = fd.define_tensor(shape=shape, dtype=dtype)
        t = x * (3.0 if kind == "constant" else 2.0)
        t = fd.ops.sub(t, y) if kind == "op" else fd.ops.add(t, y)
        t = fd.ops.add(y, t) if kind == "order" else fd.ops.add(t, y)
        if kind == "alias":
            fd.add_output(t, x)
        else:
            fd.add_output(t)
        if kind == "two-outputs":
            fd.add_output(y * 2.0)
    return fd


def fd_add(fd, a, b):
    return fd.ops.add(a, b)


VARIANTS = ["same", "name", "static", "dtype", "contiguity", "constant", "op", "order", "alias", "two-outputs"]


def test_the_definition_fingerprint_ignores_locations_and_sees_every_change():
    with FusionDefinition(name="v") as inline:  # the program of _variant("same"), written elsewhere
        x, y = inline.define_tensor(shape=[-1, -1]), inline.define_tensor(shape=[-1, -1])
        inline.add_output(fd_add(inline, fd_add(inline, x * 2.0, y), y))
    assert inline.fingerprint() == _variant("same").fingerprint()
    assert inline.records[0].loc != _variant("same").records[0].loc
    prints = {kind: _variant(kind).fingerprint() for kind in VARIANTS}
    assert len(set(prints.values())) == len(VARIANTS), prints


def test_the_cache_and_artifact_modules_do_not_import_mlir():
    code = (
        "import sys, fuser_mlir.runtime.cache, fuser_mlir.runtime.artifact, fuser_mlir.runtime.image, fuser_mlir.runtime.signature\n"
        "sys.exit(any(m == 'mlir' or m.startswith('mlir.') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], env=subprocess_env(REPO)).returncode == 0
