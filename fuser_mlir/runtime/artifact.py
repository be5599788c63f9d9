"""Compiled artifacts: a compiled fusion saved to disk, loadable without MLIR.

``compiled.export(path)`` writes an artifact; ``fuser_mlir.load(path)`` reads
one back as a :class:`LoadedFusion`, which runs with the same
``run(inputs, outputs=None)`` contract and the same argument validation
(the executor's own functions) as a freshly compiled fusion. An artifact is
a directory, or one zip file when the path ends in ``.fsn``::

    manifest.json         format + version, compiler and MLIR versions, target,
                          signature, executor key, launch plan, segments,
                          alias/preallocation contract, hazard report,
                          kernel image spec, sha256 + size of every file
    kernels/cpu.so        the kernel image's files (backend-specific:
    kernels/*.ptx|cubin   see runtime/image.py)
    ir/fuser.mlir         the fusion in the fuser dialect, for reproduction
    ir/<stage>.mlir       the IR after the other stages, for inspection

One artifact holds the code compiled for *one* executor key (dtypes, stride
order, contiguity, broadcast dims, alignment class of every argument, which
outputs the caller gives): arguments that validate against the definition
but have another key are rejected with an InputError that names the
argument and what differs (a fresh FusionExecutorCache would compile again;
a loaded artifact cannot). Sizes stay symbolic.

Loading never executes anything from the artifact: no pickle (JSON only),
and a CPU kernel library must have no initialisers (see runtime/cpu.py).
It checks, and fails with an :class:`~fuser_mlir.errors.ArtifactError`
naming the failed check: zip entry paths (no absolute paths, no ``..``, no
links, no duplicates, nothing unlisted), the manifest's format and format
version, every listed file's size and sha256, the target, and the kernel
image. The sha256 sums catch corruption and truncation, not tampering: the
kernels are native code, to be trusted like any shared library.

This module never imports ``mlir``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import posixpath
import shutil
import stat
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

from fuser_mlir.errors import ArtifactError, InputError
from fuser_mlir.runtime.image import KernelImage, load_kernels
from fuser_mlir.runtime.plan import HazardResolution, Inspectable, LaunchPlan, MemoryStats, Runnable, Segment
from fuser_mlir.runtime.signature import FusionSignature

FORMAT = "fuser-mlir-artifact"
#: The format version written. Version 2: a CUDA launch's ``shared_bytes`` may be
#: a formula of the argument shapes (dynamic shared memory), which readers of
#: version 1 would launch with none: they refuse version 2 by its number.
#: Version 3: a launch formula may read the device's SM count (``["sms"]``,
#: a grid of one block an SM), which readers of version 2 do not know.
FORMAT_VERSION = 3
#: The format versions read (older artifacts have fewer kinds of formulas).
READABLE_VERSIONS = (1, 2, 3)
MANIFEST = "manifest.json"
ZIP_SUFFIX = ".fsn"
#: The largest file a zip artifact may unpack to (a guard against zip bombs).
MAX_FILE_BYTES = 1 << 30


# -- versions -----------------------------------------------------------------------


@functools.cache
def source_hash() -> str:
    """sha256 over the package's Python sources and the dialect definition:
    part of the compiler version, so a changed compiler never reuses a cache
    entry (the release version alone does not change between commits)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.irdl.mlir")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def compiler_version() -> str:
    """``0.1.0+<source hash prefix>``."""
    from fuser_mlir import __version__

    return f"{__version__}+{source_hash()[:16]}"


@functools.cache
def mlir_version() -> str:
    """The MLIR bindings' distribution version, read without importing ``mlir``:
    from the ``dist-info`` directory beside the package (``importlib.metadata``
    costs about 40 ms to import, more than the rest of a disk-cache hit)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("mlir")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        site = Path(next(iter(spec.submodule_search_locations))).parent
        found = sorted(site.glob("xtc_mlir_python_bindings-*.dist-info"))
        if found:
            return found[-1].name[len("xtc_mlir_python_bindings-") : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xtc-mlir-python-bindings")
    except PackageNotFoundError:
        return "unknown"


# -- keys as JSON ---------------------------------------------------------------------


def key_to_json(key) -> list:
    return json.loads(json.dumps(key))


def key_from_json(raw):
    """The executor key (nested tuples) from its JSON form (nested lists)."""
    if isinstance(raw, list):
        return tuple(key_from_json(x) for x in raw)
    return raw


# -- export ---------------------------------------------------------------------------


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def contract(signature: FusionSignature, plan: LaunchPlan) -> dict:
    """The alias and preallocation contract, in words a reader of the manifest can check."""
    visible = [o for o in signature.outputs if o.visible]
    given = sorted(b.index for b in plan.buffers if b.kind == "given")
    return {
        "aliases": [
            {"output": o.position, "input": o.alias_input, "visible": o.visible} for o in signature.outputs if o.alias_input is not None
        ],
        "visible_outputs": len(visible),
        "given_outputs": [i in given for i in range(len(visible))],
        "allocated_outputs": sorted(b.index for b in plan.buffers if b.kind == "output"),
    }


def artifact_contents(compiled, extra: dict | None = None) -> tuple[dict, dict[str, bytes]]:
    """The manifest and files of ``compiled`` (a CompiledFusion or LoadedFusion)."""
    image: KernelImage | None = compiled.image
    if image is None:
        reason = getattr(compiled, "image_error", "") or "it has no kernel image"
        raise ArtifactError(f"cannot export fusion {compiled.name!r} compiled for {compiled.device}: {reason}")
    if compiled.key is None:
        raise ArtifactError(
            f"cannot export fusion {compiled.name!r}: it was compiled without an executor key (compile_fusion called directly); "
            "compile it with fd.compile(inputs, outputs=...) so the artifact records the argument signature its kernels were compiled for"
        )
    files = dict(image.files)
    for stage, text in compiled.stages.items():
        files[f"ir/{stage}.mlir"] = text.encode()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "compiler_version": compiler_version(),
        "mlir_version": mlir_version(),
        "name": compiled.name,
        "backend": image.backend,
        "device": compiled.device,
        "target": image.spec.get("target") or {k: image.spec[k] for k in ("arch",) if k in image.spec},
        "signature": compiled.signature.to_json(),
        "executor_key": key_to_json(compiled.key),
        "hazard_policy": compiled.hazard_policy,
        "plan": json.loads(compiled.plan.to_json()),
        "segments": [{"name": s.name, "ops": s.ops, "inputs": s.inputs, "outputs": s.outputs} for s in compiled.segments],
        "contract": contract(compiled.signature, compiled.plan),
        "hazard_report": [{"input": h.input, "resolution": h.resolution, "message": h.message} for h in compiled.hazard_report],
        "image": image.spec,
        "stages": {stage: f"ir/{stage}.mlir" for stage in compiled.stages},
        "files": {path: {"sha256": _sha256(data), "size": len(data)} for path, data in sorted(files.items())},
    }
    manifest.update(extra or {})
    return manifest, files


def _temporary_name(path: Path) -> Path:
    import secrets

    return path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")


def write_zip(path: Path, manifest: dict, files: dict[str, bytes], *, private: bool = False) -> None:
    """Write a ``.fsn`` zip to a temporary name next to ``path``, then rename it
    into place; ``private`` makes it owner-only (else the umask decides)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = _temporary_name(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
            z.writestr(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
            for name, data in sorted(files.items()):
                z.writestr(name, data)
        os.replace(temp, path)
    except BaseException:
        remove_if_present(temp)
        raise


def write_directory(path: Path, manifest: dict, files: dict[str, bytes]) -> None:
    """Write an artifact directory under a temporary name, then rename it into
    place (an existing artifact directory there is replaced)."""
    if path.exists() and not (path / MANIFEST).is_file():
        raise ArtifactError(f"cannot export to {path}: it exists and is not a fuser-mlir artifact; choose a new path")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = _temporary_name(path)
    temp.mkdir()
    try:
        for name, data in files.items():
            target = temp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (temp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if path.exists():
            shutil.rmtree(path)
        os.replace(temp, path)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def export(compiled, path, *, extra: dict | None = None) -> str:
    """Write ``compiled`` as an artifact at ``path`` (a ``.fsn`` zip or a directory)."""
    path = Path(path)
    manifest, files = artifact_contents(compiled, extra)
    try:
        if path.suffix == ZIP_SUFFIX:
            write_zip(path, manifest, files)
        else:
            write_directory(path, manifest, files)
    except OSError as err:  # a read-only or missing place, a directory where the zip goes: nothing was left there
        raise ArtifactError(f"cannot write the artifact {path}: {err.strerror or err}; choose a writable path") from err
    return str(path)


def remove_if_present(path) -> None:
    """Delete a file; one already gone is fine (another process removed it)."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


# -- reading and checking ----------------------------------------------------------------


def check_entry_path(name: str, where: str) -> None:
    """Reject absolute paths, ``..``, backslashes and empty parts in an entry name."""
    parts = name.split("/")
    bad = (
        not name
        or name.startswith("/")
        or "\\" in name
        or (len(name) > 1 and name[1] == ":")
        or any(part in ("", ".", "..") for part in parts)
        or posixpath.normpath(name) != name
    )
    if bad:
        raise ArtifactError(f"entry path check failed: {where} has the entry {name!r}, which is absolute or leaves the artifact; refusing to load it")


def _read_zip(path: Path) -> dict[str, bytes]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise ArtifactError(f"zip check failed: {path} is not a readable .fsn zip file ({err}); it may be truncated") from None
    contents: dict[str, bytes] = {}
    with archive:
        for info in archive.infolist():
            check_entry_path(info.filename, str(path))
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ArtifactError(f"entry path check failed: {path} entry {info.filename!r} is a symbolic link; refusing to load it")
            if info.file_size > MAX_FILE_BYTES:
                raise ArtifactError(f"size check failed: {path} entry {info.filename!r} unpacks to {info.file_size} bytes, more than {MAX_FILE_BYTES}")
            if info.filename in contents:
                raise ArtifactError(f"entry path check failed: {path} has the entry {info.filename!r} twice")
            try:
                contents[info.filename] = archive.read(info)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as err:  # zlib: a corrupted deflate stream
                raise ArtifactError(f"zip check failed: reading {info.filename!r} from {path} failed ({err}); the file is corrupted") from None
    return contents


def _read_directory(path: Path, names: Sequence[str]) -> dict[str, bytes]:
    root = path.resolve()
    contents = {}
    for name in names:
        check_entry_path(name, str(path))
        target = path / name
        if target.is_symlink() or not target.resolve().is_relative_to(root):
            raise ArtifactError(f"entry path check failed: {path}/{name} is a link or leaves the artifact; refusing to load it")
        try:
            contents[name] = target.read_bytes()
        except OSError as err:
            raise ArtifactError(f"file check failed: {path} lists {name}, which cannot be read ({err.strerror})") from None
    return contents


def _parse_manifest(data: bytes, where: str) -> dict:
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ArtifactError(f"manifest check failed: {where}/{MANIFEST} is not valid JSON ({err}); the artifact is corrupted") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"format check failed: {where} is not a fuser-mlir artifact (its manifest has no format {FORMAT!r})")
    version = manifest.get("format_version")
    if version not in READABLE_VERSIONS:
        readable = ", ".join(str(v) for v in READABLE_VERSIONS[:-1]) + f" and {READABLE_VERSIONS[-1]}"
        raise ArtifactError(
            f"format version check failed: {where} has format version {version!r}, this fuser-mlir reads versions {readable}; "
            "export it again with this version"
        )
    if not isinstance(manifest.get("files"), dict):
        raise ArtifactError(f"manifest check failed: {where} lists no files")
    return manifest


def read_artifact(path) -> tuple[dict, dict[str, bytes]]:
    """The checked manifest and the verified files of the artifact at ``path``."""
    path = Path(path)
    if path.is_dir():
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise ArtifactError(f"format check failed: {path} is a directory without {MANIFEST}, not a fuser-mlir artifact")
        manifest = _parse_manifest(manifest_path.read_bytes(), str(path))
        files = _read_directory(path, list(manifest["files"]))
    elif path.is_file():
        contents = _read_zip(path)
        if MANIFEST not in contents:
            raise ArtifactError(f"format check failed: {path} has no {MANIFEST}, not a fuser-mlir artifact")
        manifest = _parse_manifest(contents.pop(MANIFEST), str(path))
        unlisted = sorted(set(contents) - set(manifest["files"]))
        if unlisted:
            raise ArtifactError(f"entry path check failed: {path} holds files its manifest does not list: {', '.join(unlisted)}")
        files = contents
    else:
        raise ArtifactError(f"no artifact at {path}: no such file or directory")
    for name, entry in manifest["files"].items():
        data = files.get(name)
        if data is None:
            raise ArtifactError(f"file check failed: {path} lists {name}, which is missing")
        if len(data) != entry.get("size"):
            raise ArtifactError(f"size check failed: {path}: {name} has {len(data)} bytes, the manifest says {entry.get('size')}; it is truncated or corrupted")
        if _sha256(data) != entry.get("sha256"):
            raise ArtifactError(f"sha256 check failed: {path}: {name} does not match the sha256 in the manifest; it is corrupted")
    return manifest, files


def load(path, device: str | None = None) -> "LoadedFusion":
    """Load the artifact at ``path`` (directory or ``.fsn``) as a runnable fusion.

    ``device`` defaults to the device it was compiled for (``cpu`` or ``cuda:N``)."""
    manifest, files = read_artifact(path)
    return LoadedFusion.from_manifest(manifest, files, device=device, where=str(path))


# -- the loaded fusion -----------------------------------------------------------------


class LoadedFusion(Inspectable, Runnable):
    """A fusion loaded from an artifact: ``run(inputs, outputs=None)`` (or
    ``execute``) like ``fd.execute``, plus the inspection API of CompiledFusion (``plan``,
    ``segments``, ``ir(stage)``, ``hazard_report``, ``to_dot()``, ``export()``)."""

    program = None
    described_as = "artifact"
    other_signature_hint = "an artifact holds code for one signature: export one compiled with arguments like these"

    def __init__(self, manifest: dict, files: dict[str, bytes], kernels: dict, device: str):
        self.manifest = manifest
        self.name: str = manifest["name"]
        self.device = device
        self.plan = LaunchPlan.from_json(json.dumps(manifest["plan"]))
        self.segments = [Segment(**s) for s in manifest["segments"]]
        self.signature = FusionSignature.from_json(manifest["signature"])
        self.hazard_report = [HazardResolution(**h) for h in manifest["hazard_report"]]
        self.hazard_policy = manifest["hazard_policy"]
        self.stages = {stage: files[name].decode() for stage, name in manifest["stages"].items()}
        self.image = KernelImage(manifest["backend"], manifest["image"], {p: files[p] for p in _image_files(manifest)})
        self.image_error = ""
        self.kernels = kernels
        key = key_from_json(manifest["executor_key"])
        self.key = (device, *key[1:])

    @classmethod
    def from_manifest(cls, manifest: dict, files: dict[str, bytes], *, device: str | None = None, where: str = "") -> "LoadedFusion":
        try:
            backend = manifest["backend"]
            device = _device_for(backend, device or manifest["device"])
            kernels = load_kernels(manifest["image"], backend, files.__getitem__, device)
            return cls(manifest, files, kernels, device)
        except ArtifactError as err:
            raise ArtifactError(f"{where}: {err}") from None
        except (KeyError, TypeError, ValueError) as err:
            raise ArtifactError(f"manifest check failed: {where}: the manifest is incomplete or malformed ({type(err).__name__}: {err})") from None

    # -- running ----------------------------------------------------------------

    def launch(self, args: Sequence[object], given: dict[int, object], *, memory: MemoryStats | None = None,
               torch_outputs: bool = False, **options) -> list:
        """Run on validated arguments, as CompiledFusion.launch (``options``
        go to the CUDA runtime's execute_plan unchanged)."""
        if self.device == "cpu":
            from fuser_mlir.runtime.cpu import execute_on_cpu

            return execute_on_cpu(self.plan, self.kernels, args, given, memory)
        from fuser_mlir.runtime import cuda

        _, _, index = self.device.partition(":")
        return cuda.execute_plan(
            self.plan, self.kernels, args, given, memory, device=int(index or 0), torch_outputs=torch_outputs, **options
        )

    # -- inspection -------------------------------------------------------------

    def export(self, path) -> str:
        return export(self, path)

    def __repr__(self) -> str:
        return f"LoadedFusion({self.name!r} on {self.device}: {self.num_segments} segment(s))"




def _image_files(manifest: dict) -> list[str]:
    return [p for p in manifest["files"] if p.startswith("kernels/")]


def _device_for(backend: str, device: str) -> str:
    if backend == "cpu":
        if device != "cpu":
            raise ArtifactError(f"device check failed: the artifact holds CPU kernels; it cannot run on {device!r}")
        return "cpu"
    if not device.startswith("cuda"):
        raise ArtifactError(f"device check failed: the artifact holds {backend} kernels; it cannot run on {device!r}")
    _, _, index = device.partition(":")
    return f"cuda:{index or 0}"


_KEY_PARTS = ("dtype", "rank", "stride order", "contiguity", "broadcast dims", "alignment class")


def describe_key_mismatch(expected, got, what: str = "artifact") -> str:
    """The first difference between two executor keys, in words (``what``: what was compiled for ``expected``)."""
    _, exp_inputs, exp_outputs = expected
    _, got_inputs, got_outputs = got
    for index, (a, b) in enumerate(zip(exp_inputs, got_inputs)):
        if a == b:
            continue
        if isinstance(a, str) or isinstance(b, str):
            return f"input {index} is a {b}, the {what} was compiled for a {a}"
        for part, x, y in zip(_KEY_PARTS, a, b):
            if x != y:
                return f"input {index} has {part} {y!r}, the {what} was compiled for {x!r}"
    exp_given = dict(exp_outputs)
    got_given = dict(got_outputs)
    if sorted(exp_given) != sorted(got_given):
        return f"the call gives outputs {sorted(got_given)}, the {what} was compiled for given outputs {sorted(exp_given)}"
    for index in sorted(exp_given):
        for part, x, y in zip(_KEY_PARTS, exp_given[index], got_given[index]):
            if x != y:
                return f"output {index} has {part} {y!r}, the {what} was compiled for {x!r}"
    return "the argument signature differs"


def loaded_key_error(loaded, key) -> InputError:
    """The error for arguments whose key is not the one of ``loaded`` (a LoadedFusion or CompiledFusion)."""
    return InputError(
        f"these arguments do not match the signature {loaded.described_as} {loaded.name!r} was compiled for: "
        f"{loaded.mismatch(key)}; {loaded.other_signature_hint}"
    )
