"""Compiled artifacts: a compiled fusion saved to disk, loadable without MLIR.

``compiled.export(path)`` writes an artifact; ``fuser_mlir.load(path)`` reads
one back as a :class:`LoadedFusion`, which runs with the same
``run(inputs, outputs=None)`` contract and the same argument validation
(the executor's own functions) as a freshly compiled fusion. An artifact is
a directory, or one zip file when the path ends in ``.fsn``::

    manifest.json         format + version, compiler and MLIR versions, target,
                          signature, executor key, launch plan, segments,
                          alias/preallocation contract, hazard report,
                          kernel image spec, sha256 + size of every file,
                          and the sha256 of the manifest itself
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
version, the manifest's own digest (:func:`manifest_digest`), every field
of the manifest as it is read (types, ranges, and that the plan, the
signature, the kernels and the executor key fit one another), every listed
file's size and sha256, the target, and the kernel image. Anything else a
malformed manifest raises while loading becomes an ArtifactError too, with
the original exception's type and text. The sha256 sums catch corruption,
truncation and hand edits, not tampering (whoever edits a file can write
its sum too): the kernels are native code, to be trusted like any shared
library.

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

from fuser_mlir.errors import ArtifactError, FuserError, InputError
from fuser_mlir.runtime.cpu import DTYPE_OF_ELEMENT
from fuser_mlir.runtime.image import KernelImage, load_kernels
from fuser_mlir.runtime.plan import (
    HazardResolution,
    Inspectable,
    LaunchPlan,
    MemoryStats,
    Runnable,
    Segment,
    check_choice,
    check_count,
    check_record,
    check_type,
    execute_on_cpu,
    malformed,
)
from fuser_mlir.runtime.signature import FusionSignature

FORMAT = "fuser-mlir-artifact"
#: The format version written. Version 2: a CUDA launch's ``shared_bytes`` may be
#: a formula of the argument shapes (dynamic shared memory), which readers of
#: version 1 would launch with none: they refuse version 2 by its number.
#: Version 3: a launch formula may read the device's SM count (``["sms"]``,
#: a grid of one block an SM), which readers of version 2 do not know.
#: Version 4: a CPU kernel may be ``elementwise`` (its calls merge dims),
#: a field readers of version 3 do not know.
FORMAT_VERSION = 4
#: The format versions read (older artifacts have fewer kinds of formulas).
READABLE_VERSIONS = (1, 2, 3, 4)
MANIFEST = "manifest.json"
#: The manifest field that holds the sha256 of the rest of the manifest
#: (:func:`manifest_digest`). Older readers ignore it, so it needed no new
#: format version; a manifest written before it existed has none, and loads
#: with its fields checked but not its digest.
DIGEST = "manifest_sha256"
#: The hazard policies a manifest may name (``resolve_alias_hazards.POLICIES``,
#: which this module cannot import: that module imports MLIR).
HAZARD_POLICIES = ("auto", "reorder", "copy", "reject")
#: The manifest's fields that loading and ``fuser-mlir inspect`` read, and their JSON types.
FIELDS = {
    "name": str, "compiler_version": str, "mlir_version": str, "backend": str, "device": str, "target": dict,
    "signature": dict, "executor_key": list, "hazard_policy": str, "plan": dict, "segments": list, "contract": dict,
    "hazard_report": list, "image": dict, "stages": dict, "files": dict,
}
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


def manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest's canonical JSON: every field but :data:`DIGEST`,
    keys sorted, no whitespace, values as JSON reads them back (so that the
    manifest an export holds and the one a load parses give one digest)."""
    fields = json.loads(json.dumps({key: value for key, value in manifest.items() if key != DIGEST}))
    return _sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode())


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
    manifest[DIGEST] = manifest_digest(manifest)
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
    if type(version) is not int or version not in READABLE_VERSIONS:  # not True, not 1.0
        readable = ", ".join(str(v) for v in READABLE_VERSIONS[:-1]) + f" and {READABLE_VERSIONS[-1]}"
        raise ArtifactError(
            f"format version check failed: {where} has format version {version!r}, this fuser-mlir reads versions {readable}; "
            "export it again with this version"
        )
    if DIGEST in manifest and manifest[DIGEST] != manifest_digest(manifest):
        raise ArtifactError(
            f"manifest check failed: {where}/{MANIFEST} was edited or damaged after export (its digest does not match); export the fusion again"
        )
    if not isinstance(manifest.get("files"), dict):
        raise ArtifactError(f"manifest check failed: {where} lists no files")
    try:
        _check_fields(manifest)
    except ArtifactError as err:
        raise ArtifactError(f"{where}: {err}") from None
    return manifest


def _check_fields(manifest: dict) -> None:
    """The types of the manifest's top-level fields and of its file list
    (the readers of the other fields check those: LaunchPlan.from_json,
    FusionSignature.from_json, the backend's load_kernels, LoadedFusion)."""
    for field, kind in FIELDS.items():
        if field not in manifest:
            raise ArtifactError(f"manifest check failed: the manifest has no {field!r}; export the fusion again")
        check_type(manifest[field], kind, field)
    check_choice(manifest["hazard_policy"], HAZARD_POLICIES, "hazard_policy")
    for name, entry in manifest["files"].items():
        field = f"files[{name!r}]"
        check_record(entry, field, ("sha256", "size"))
        check_count(entry["size"], f"{field}.size")
        sha256 = entry["sha256"]
        if not (isinstance(sha256, str) and len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256)):
            raise malformed(f"{field}.sha256", sha256, "not a sha256 (64 hex digits)")
    for stage, name in manifest["stages"].items():
        if not isinstance(name, str) or name not in manifest["files"]:
            raise malformed(f"stages[{stage!r}]", name, "not a file the manifest lists")


def read_artifact(path) -> tuple[dict, dict[str, bytes]]:
    """The checked manifest and the verified files of the artifact at ``path``."""
    path = Path(path)
    try:
        return _read_verified(path)
    except (FuserError, OSError):
        raise
    except Exception as err:  # a malformed manifest that no check foresaw
        raise malformed_manifest(str(path), err) from err


def malformed_manifest(where: str, err: Exception) -> ArtifactError:
    """The error for an exception that a malformed manifest raised where no
    check foresaw it: its type and text, for a bug report if it is a bug."""
    return ArtifactError(
        f"manifest check failed: {where}: the manifest is incomplete or malformed ({type(err).__name__}: {err}); export the fusion again"
    )


def _read_verified(path: Path) -> tuple[dict, dict[str, bytes]]:
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
        key = _key_from_json(manifest["executor_key"], self.signature)
        self.key = (device, *key[1:])
        check_fit(self.plan, self.signature, kernels, {index for index, _ in key[2]})

    @classmethod
    def from_manifest(cls, manifest: dict, files: dict[str, bytes], *, device: str | None = None, where: str = "") -> "LoadedFusion":
        """The fusion of a manifest and files that :func:`read_artifact`
        checked, its kernels loaded for ``device``. A failure is an
        ArtifactError that names ``where`` (the artifact's path); a backend's
        own errors (no CUDA here) stay what they are."""
        try:
            backend = manifest["backend"]
            device = _device_for(backend, device or manifest["device"])
            kernels = load_kernels(manifest["image"], backend, files.__getitem__, device)
            return cls(manifest, files, kernels, device)
        except ArtifactError as err:
            raise ArtifactError(f"{where}: {err}") from None
        except FuserError:
            raise
        except Exception as err:  # a malformed manifest that no check foresaw
            raise malformed_manifest(where, err) from err

    # -- running ----------------------------------------------------------------

    def launch(self, args: Sequence[object], given: dict[int, object], *, memory: MemoryStats | None = None,
               torch_outputs: bool = False, **options) -> list:
        """Run on validated arguments, as CompiledFusion.launch (``options``
        go to the CUDA runtime's execute_plan unchanged)."""
        if self.device == "cpu":
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


def _key_from_json(raw: list, signature: FusionSignature) -> tuple:
    """The executor key of a manifest, checked against the signature:
    ``[device, [one entry per input], [[given output, its entry], ...]]``, a
    scalar's entry its type's name, a tensor's its dtype, rank and four more
    parts (see ``executor.tensor_signature``); no objects (a key must hash)."""
    inputs = signature.inputs
    if not (len(raw) == 3 and isinstance(raw[0], str) and isinstance(raw[1], list) and len(raw[1]) == len(inputs)
            and isinstance(raw[2], list) and _plain(raw)):
        raise malformed("executor_key", raw, f"not [device, one entry per input ({len(inputs)}), given outputs]")
    for index, (entry, spec) in enumerate(zip(raw[1], inputs)):
        dtype = DTYPE_OF_ELEMENT[spec.dtype.mlir]
        if spec.kind == "scalar" and not isinstance(entry, str):
            raise malformed(f"executor_key[1][{index}]", entry, f"not the type name of scalar input {index}")
        if spec.kind == "tensor" and not _tensor_entry(entry, dtype, len(spec.shape)):
            raise malformed(f"executor_key[1][{index}]", entry, f"not the key of input {index}, a {dtype} tensor of rank {len(spec.shape)}")
    for k, entry in enumerate(raw[2]):
        if not (isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int and _tensor_entry(entry[1])):
            raise malformed(f"executor_key[2][{k}]", entry, "not [given output, the key of its tensor]")
    return key_from_json(raw)


def _plain(value) -> bool:
    """Whether ``value`` holds lists, strings, numbers, true/false and null alone."""
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float))


def _tensor_entry(entry, dtype: str | None = None, rank: int | None = None) -> bool:
    """Whether ``entry`` is a tensor's part of an executor key (of ``dtype`` and ``rank`` where given)."""
    if not (isinstance(entry, list) and len(entry) == 6 and isinstance(entry[0], str) and type(entry[1]) is int):
        return False
    return dtype in (None, entry[0]) and rank in (None, entry[1])


def check_fit(plan: LaunchPlan, signature: FusionSignature, kernels: dict, given: set[int] | None = None) -> None:
    """Check that a loaded plan fits the signature and the kernels, which
    their readers check each alone: its inputs and visible outputs are the
    signature's (count, dtype and rank), its given-output buffers are the
    outputs the executor key has given (``given``, where known), each step
    calls a kernel of the image with arguments of the kinds it takes (dtype
    and rank), and the only inputs it writes are those the signature updates
    in place (which a call checks are writable)."""
    inputs = signature.inputs
    if plan.num_inputs != len(inputs):
        raise malformed("plan.num_inputs", plan.num_inputs, f"but the signature has {len(inputs)} inputs")
    visible = [o for o in signature.outputs if o.visible]
    if len(plan.outputs) != len(visible):
        raise malformed("plan.outputs", plan.outputs, f"not one buffer per visible output of the signature ({len(visible)})")
    for k, (buffer_id, spec) in enumerate(zip(plan.outputs, visible)):
        b = plan.buffer(buffer_id)
        _check_dtype(b, spec.dtype, f"visible output {k}")
        if b.kind == "given" and b.index != k:
            raise malformed(f"plan.buffers[{b.id}].index", b.index, f"but the buffer is visible output {k}")
        if b.kind != "given":  # (a given buffer's shape is the caller's, checked by every call)
            _check_rank(b, len(spec.shape), f"visible output {k}")
    for k in sorted(given or ()):
        if k >= len(plan.outputs) or plan.buffer(plan.outputs[k]).kind != "given":
            raise malformed("executor_key[2]", sorted(given), f"but the plan does not take output {k} from the caller")
    for b in plan.buffers:
        if b.kind == "given" and (given is not None and b.index not in given or plan.outputs[b.index] != b.id):
            raise malformed(f"plan.buffers[{b.id}].index", b.index, "not an output the executor key has given")
        if b.kind != "input":
            continue
        if inputs[b.index].kind != "tensor":
            raise malformed(f"plan.buffers[{b.id}].index", b.index, f"but input {b.index} is a scalar")
        _check_dtype(b, inputs[b.index].dtype, f"input {b.index}")
        _check_rank(b, len(inputs[b.index].shape), f"input {b.index}")
    updated = {o.alias_input for o in signature.outputs if o.alias_input is not None}
    ranks = [len(visible[b.index].shape) if b.kind == "given" else len(b.shape) for b in plan.buffers]
    for i, step in enumerate(plan.steps):
        _check_step(plan, i, kernels, inputs, updated, ranks)


def _check_rank(buffer, rank: int, what: str) -> None:
    if len(buffer.shape) != rank:
        raise malformed(f"plan.buffers[{buffer.id}].shape", buffer.shape, f"of rank {len(buffer.shape)}, but {what} has rank {rank}")


def _check_dtype(buffer, dtype, what: str) -> None:
    expected = DTYPE_OF_ELEMENT[dtype.mlir]
    if buffer.dtype != expected:
        raise malformed(f"plan.buffers[{buffer.id}].dtype", buffer.dtype, f"but {what} is {expected}")


def _check_step(plan: LaunchPlan, index: int, kernels: dict, inputs: list, updated: set[int], ranks: list[int]) -> None:
    """Check step ``index``: its kernel, its arguments' kinds, the inputs it writes."""
    step, field = plan.steps[index], f"plan.steps[{index}]"
    kernel = kernels.get(step.kernel)
    if kernel is None:
        raise malformed(f"{field}.kernel", step.kernel, f"not a kernel of the image ({', '.join(sorted(kernels))})")
    for buffer_id in step.writes:
        b = plan.buffer(buffer_id)
        if b.kind == "input" and b.index not in updated:
            raise ArtifactError(
                f"manifest check failed: {field} writes input {b.index}, which the signature does not update in place "
                f"(no output has alias_input {b.index}); export the fusion again"
            )
    kinds = getattr(kernel, "arg_kinds", None)
    if kinds is None:
        return
    if len(kinds) != len(step.args):
        raise malformed(f"{field}.args", step.args, f"not the {len(kinds)} arguments kernel {step.kernel} takes")
    for j, ((what, value), kind) in enumerate(zip(step.args, kinds)):
        takes = f"{kind.dtype} tensor of rank {kind.rank}" if kind.is_tensor else f"{kind.dtype} scalar"
        if what == "scalar" and (kind.is_tensor or inputs[value].kind != "scalar"):
            raise malformed(f"{field}.args[{j}]", [what, value], f"but kernel {step.kernel} takes a {takes} there")
        if what == "buffer" and (not kind.is_tensor or plan.buffer(value).dtype != kind.dtype or ranks[value] != kind.rank):
            dtype = plan.buffer(value).dtype
            raise malformed(f"{field}.args[{j}]", [what, value], f"a {dtype} buffer of rank {ranks[value]}, but kernel {step.kernel} takes a {takes} there")


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
        return _tensor_difference(f"input {index}", a, b, what)
    exp_given = dict(exp_outputs)
    got_given = dict(got_outputs)
    if sorted(exp_given) != sorted(got_given):
        return f"the call gives outputs {sorted(got_given)}, the {what} was compiled for given outputs {sorted(exp_given)}"
    for index in sorted(exp_given):
        if exp_given[index] != got_given[index]:
            return _tensor_difference(f"output {index}", exp_given[index], got_given[index], what)
    return "the argument signature differs"


def _tensor_difference(tensor: str, expected, got, what: str) -> str:
    """The first part of a tensor's key that differs, in words. Size-1 dims
    come before the layout parts: they change those too, and are the cause."""
    parts = dict(zip(_KEY_PARTS, zip(expected, got)))
    x, y = parts["broadcast dims"]
    if parts["dtype"][0] == parts["dtype"][1] and parts["rank"][0] == parts["rank"][1] and x != y:
        return (
            f"{tensor} has size 1 in dims {list(y)}, the {what} was compiled for size 1 in dims {list(x)} (a size-1 dim is "
            f"compiled as a broadcast dim: compile from examples of 2 or more where a dim varies)"
        )
    for part, (x, y) in parts.items():
        if x != y:
            return f"{tensor} has {part} {y!r}, the {what} was compiled for {x!r}"
    return f"{tensor} differs"


def loaded_key_error(loaded, key) -> InputError:
    """The error for arguments whose key is not the one of ``loaded`` (a LoadedFusion or CompiledFusion)."""
    return InputError(
        f"these arguments do not match the signature {loaded.described_as} {loaded.name!r} was compiled for: "
        f"{loaded.mismatch(key)}; {loaded.other_signature_hint}"
    )
