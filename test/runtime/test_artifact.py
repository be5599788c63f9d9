"""Compiled artifacts: export, load without MLIR, run like a fresh fusion,
and every integrity check failing with a message that names it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import fuser_mlir
from fuser_mlir import DataType, FusionDefinition
from fuser_mlir.errors import ArtifactError, DeviceError, InputError
from fuser_mlir.runtime import artifact
from fuser_mlir.runtime.artifact import DIGEST, MANIFEST, LoadedFusion, manifest_digest, read_artifact
from blocks import cut_into_blocks, merging
from devices import subprocess_env
from reference import evaluate

RNG = np.random.default_rng(8)
REPO = Path(__file__).resolve().parents[2]


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def softmax_fusion() -> FusionDefinition:
    """Softmax over the columns (dim 0) from primitives, with a bias and a
    runtime scalar: an outer-dim normalization, so several segments."""
    with FusionDefinition(name="softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        bias = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
        scale = fd.define_scalar(dtype=DataType.Double)
        t = (x + bias) * scale
        e = fd.ops.exp(t - fd.ops.max(t, dims=[0], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[0], keepdim=True))
    return fd


def alias_fusion() -> FusionDefinition:
    """A hidden in-place update, a given output and an allocated one."""
    with FusionDefinition(name="alias") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[1], keepdim=True)
        fd.add_output(x - s, x)
        fd.add_output(s)
        fd.add_output(fd.ops.tanh(x) * 2.0)
    return fd


def softmax_args(rows=5, cols=9):
    return [rand(rows, cols), rand(1, cols), 0.7]


@pytest.fixture(params=["dir", "fsn"])
def exported(request, tmp_path):
    """(fusion definition, path of its exported artifact) for the softmax."""
    fd = softmax_fusion()
    compiled = fd.compile(softmax_args())
    path = tmp_path / ("softmax.fsn" if request.param == "fsn" else "softmax")
    assert compiled.export(path) == str(path)
    return fd, path


def check_against_reference(fd, outs, inputs, originals, rtol=1e-5, atol=1e-6):
    expected = evaluate(fd, originals)
    visible = [e for e, o in zip(expected, fd.outputs) if o.visible]
    assert len(outs) == len(visible)
    for got, want in zip(outs, visible):
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)
    for spec, value, original in zip(fd.inputs, inputs, originals):
        aliased = any(o.alias_input == spec.index for o in fd.outputs)
        if spec.kind == "tensor" and not aliased:
            np.testing.assert_array_equal(value, original)


def test_a_loaded_artifact_matches_the_reference_on_new_sizes(exported):
    fd, path = exported
    loaded = fuser_mlir.load(path)
    assert isinstance(loaded, LoadedFusion) and loaded.device == "cpu" and loaded.num_segments >= 2
    for rows, cols in [(5, 9), (3, 130), (2, 2)]:
        inputs = softmax_args(rows, cols)
        originals = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
        (allocated,) = loaded.run(inputs)
        check_against_reference(fd, [allocated], inputs, originals)
    assert loaded.stats.hits == 3 and loaded.stats.compilations == 0


def test_aliases_and_preallocated_outputs_through_a_loaded_artifact(tmp_path):
    fd = alias_fusion()
    example = [rand(4, 6)]
    s_example = np.empty((4, 1), np.float32)
    fd.compile(example, outputs=[s_example, None]).export(tmp_path / "alias.fsn")
    loaded = fuser_mlir.load(tmp_path / "alias.fsn")
    assert loaded.manifest["contract"]["aliases"] == [{"output": 0, "input": 0, "visible": False}]
    assert loaded.manifest["contract"]["given_outputs"] == [True, False]
    x = rand(7, 11)
    x0 = x.copy()
    s_buf = np.full((7, 1), np.nan, np.float32)
    s_out, doubled = loaded.run([x], outputs=[s_buf, None])
    assert s_out is s_buf
    expected = evaluate(fd, [x0])
    np.testing.assert_allclose(x, expected[0], rtol=1e-5, atol=1e-5)  # the in-place update landed in x
    np.testing.assert_allclose(s_buf, expected[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(doubled, expected[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["plan"]["buffers"][m["plan"]["outputs"][0]].update(kind="output", shape=[["dim", 0, 0], ["const", 1]]),
     r"executor_key\[2\] is \[0\], but the plan does not take output 0 from the caller"),
    (lambda m: m["plan"]["buffers"][m["plan"]["outputs"][0]].update(index=1), r"plan.buffers\[\d+\].index is 1, but the buffer is visible output 0"),
], ids=["given-kind-changed", "given-index-changed"])
def test_a_plan_whose_given_outputs_are_not_the_keys_is_refused(tmp_path, edit, message):
    # Loaded without a digest (an older artifact's manifest), each ran: a ValueError or KeyError on every call.
    fd = alias_fusion()
    fd.compile([rand(4, 6)], outputs=[np.empty((4, 1), np.float32), None]).export(tmp_path / "alias")

    def unsealed(manifest):
        edit(manifest)
        manifest.pop(DIGEST)

    edit_manifest(tmp_path / "alias", unsealed, seal=False)
    expect_failure(tmp_path / "alias", message)


def test_a_loaded_artifact_validates_exactly_like_a_fresh_fusion(exported):
    fd, path = exported
    loaded = fuser_mlir.load(path)
    x, bias, scale = softmax_args()
    bad_calls = [
        ([x.astype(np.float64), bias, scale], None),
        ([x, bias], None),
        ([x, rand(1, 4), scale], None),
        ([x[0], bias, scale], None),
        ([x, bias, scale], [np.empty((5, 8), np.float32)]),
        ([x, bias, scale], [x]),
    ]
    for inputs, outputs in bad_calls:
        with pytest.raises(InputError) as fresh:
            fd.execute(inputs, outputs=outputs)
        with pytest.raises(InputError) as from_artifact:
            loaded.run(inputs, outputs=outputs)
        assert str(from_artifact.value) == str(fresh.value)


def test_cuda_graph_reaches_the_executor_as_for_a_fresh_fusion(exported):
    fd, path = exported
    loaded = fuser_mlir.load(path)
    with pytest.raises(DeviceError) as fresh:
        fd.execute(softmax_args(), cuda_graph=True)
    with pytest.raises(DeviceError) as from_artifact:
        loaded.run(softmax_args(), cuda_graph=True)
    assert str(from_artifact.value) == str(fresh.value) and "cuda_graph=True needs CUDA arrays" in str(fresh.value)


def test_arguments_of_another_signature_are_rejected_with_what_differs(exported):
    _, path = exported
    loaded = fuser_mlir.load(path)
    x, bias, scale = softmax_args()
    with pytest.raises(InputError, match=r"input 0 has stride order \(0, 1\), the artifact was compiled for \(1, 0\)"):
        loaded.run([np.asfortranarray(x), bias, scale])
    with pytest.raises(InputError, match=r"the call gives outputs \[0\], the artifact was compiled for given outputs \[\]"):
        loaded.run([x, bias, scale], outputs=[np.empty_like(x)])


def test_a_loaded_artifact_and_a_compiled_fusion_execute_as_fd_execute_does(exported, monkeypatch):
    # `.execute` is fd.execute's name; on a loaded artifact it once was the executor's internal entry
    # (validated arguments and a dict of given outputs) and a user's call failed with a TypeError.
    # FUSER_CACHE=0: fd.compile then returns the fusion it compiled, not a LoadedFusion from the disk cache.
    monkeypatch.setenv("FUSER_CACHE", "0")
    fd, path = exported
    compiled = softmax_fusion().compile(softmax_args())
    given_compiled = softmax_fusion().compile(softmax_args(), outputs=[np.empty((5, 9), np.float32)])
    assert not isinstance(compiled, LoadedFusion) and not isinstance(given_compiled, LoadedFusion)
    for runner in (fuser_mlir.load(path), compiled, given_compiled):
        inputs = softmax_args(6, 33)
        originals = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
        given = np.full((6, 33), np.nan, np.float32) if runner is given_compiled else None
        (out,) = runner.execute(inputs, outputs=None if given is None else [given])
        assert given is None or out is given
        check_against_reference(fd, [out], inputs, originals)
        (again,) = runner.run(inputs, outputs=None if given is None else [np.full_like(given, np.nan)])
        check_against_reference(fd, [again], inputs, originals)
        assert runner.stats.hits == 2 and runner.stats.compilations == 0
    with pytest.raises(InputError, match=r"input 0 has stride order \(0, 1\), the fusion was compiled for \(1, 0\); "
                                         r"fd.execute compiles the fusion again for arguments like these"):
        compiled.run([np.asfortranarray(rand(5, 9)), rand(1, 9), 0.7])


def test_a_loaded_artifact_takes_an_empty_batch(exported):
    # NumPy's zero strides of an empty array once read as another stride order, which the artifact refused.
    _, path = exported
    loaded = fuser_mlir.load(path)
    empty = np.empty((0, 9), np.float32)
    assert empty.strides == (0, 0)
    (out,) = loaded.run([empty, rand(1, 9), 0.7])
    assert out.shape == (0, 9) and loaded.stats.hits == 1


def test_a_fusion_compiled_without_a_signature_refuses_to_run_and_says_how_to(monkeypatch):
    from fuser_mlir.compiler import compile_fusion

    compiled = compile_fusion(softmax_fusion())
    with pytest.raises(InputError, match="fusion 'softmax' was compiled without an argument signature .* run it through fd.execute"):
        compiled.run(softmax_args())


def pinned_mlir_version() -> str:
    """The bindings version pyproject.toml pins, or "unknown" where the
    bindings were unpacked without their package metadata (the GPU host's bundle)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("xtc-mlir-python-bindings")
    except PackageNotFoundError:
        return "unknown"
    text = (REPO / "pyproject.toml").read_text()
    return text.split('"xtc-mlir-python-bindings==', 1)[1].split('"', 1)[0]


def test_the_manifest_records_versions_signature_plan_and_checksums(exported):
    _, path = exported
    manifest, files = read_artifact(path)
    assert manifest["format_version"] == 4 and manifest["backend"] == "cpu"
    assert manifest["compiler_version"].startswith(fuser_mlir.__version__ + "+")
    assert manifest["mlir_version"] == pinned_mlir_version()
    assert [s["shape"] for s in manifest["signature"]["inputs"]] == [[-1, -1], [1, -1], []]
    assert manifest["executor_key"][0] == "cpu"
    assert set(files) == set(manifest["files"]) and "kernels/cpu.so" in files and "ir/fuser.mlir" in files
    assert '"fuser.exp"' in files["ir/fuser.mlir"].decode()
    assert all(len(entry["sha256"]) == 64 for entry in manifest["files"].values())
    assert manifest["plan"]["steps"] and manifest["target"]["machine"]
    assert manifest[DIGEST] == manifest_digest(manifest) and len(manifest[DIGEST]) == 64


MLIR_BLOCKER = """
import sys
class _NoMlir:
    def find_spec(self, name, path=None, target=None):
        if name == "mlir" or name.startswith("mlir."):
            raise ImportError("mlir is blocked in this process")
        return None
sys.meta_path.insert(0, _NoMlir())
"""


def test_compiling_without_mlir_says_what_it_needs_and_what_runs_without_it(tmp_path):
    # A miss in such a process raised the bare "No module named 'mlir'" (here: the blocker's message).
    code = MLIR_BLOCKER + textwrap.dedent(
        """
        import numpy as np
        from fuser_mlir import DataType, FusionDefinition
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.exp(fd.define_tensor(shape=[-1], dtype=DataType.Float)))
        try:
            fd.execute([np.ones(4, np.float32)])
        except ImportError as err:
            print(err)
        """
    )
    env = subprocess_env(REPO, FUSER_CACHE="0")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("compiling a fusion needs the MLIR Python bindings (the xtc-mlir-python-bindings package")
    assert "(mlir is blocked in this process)" in result.stdout and "an exported artifact (fuser_mlir.load) or a disk-cache hit" in result.stdout


def test_loading_and_running_needs_no_mlir(exported):
    fd, path = exported
    inputs = softmax_args(3, 17)
    np.save(path.parent / "x.npy", inputs[0])
    np.save(path.parent / "bias.npy", inputs[1])
    code = MLIR_BLOCKER + textwrap.dedent(
        f"""
        import numpy as np, fuser_mlir
        try:
            import mlir
            raise SystemExit("the blocker does not block")
        except ImportError:
            pass
        loaded = fuser_mlir.load({str(path)!r})
        x, bias = np.load({str(path.parent / 'x.npy')!r}), np.load({str(path.parent / 'bias.npy')!r})
        (out,) = loaded.run([x, bias, 0.7])
        np.save({str(path.parent / 'out.npy')!r}, out)
        assert not any(m == "mlir" or m.startswith("mlir.") for m in sys.modules)
        assert not any(m == "cuda" or m.startswith("cuda.") for m in sys.modules)  # the CUDA loader stays unimported
        print("ran without mlir")
        """
    )
    env = subprocess_env(REPO)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ran without mlir" in result.stdout
    check_against_reference(fd, [np.load(path.parent / "out.npy")], inputs, inputs)


# -- integrity checks ----------------------------------------------------------------


def as_directory(path: Path, tmp_path: Path) -> Path:
    """The artifact at ``path`` as a directory we may edit."""
    if path.is_dir():
        return path
    target = tmp_path / "unzipped"
    with zipfile.ZipFile(path) as z:
        z.extractall(target)
    return target


def edited(text: str | bytes, change, seal: bool) -> str:
    """The manifest ``text`` after ``change``; ``seal`` writes its digest anew,
    as an export would, so that the edit reaches the checks behind the
    digest (unsealed, the digest check refuses any edit)."""
    manifest = json.loads(text)
    change(manifest)
    if seal:
        manifest[DIGEST] = manifest_digest(manifest)
    return json.dumps(manifest)


def edit_manifest(directory: Path, change, *, seal: bool = True) -> None:
    (directory / MANIFEST).write_text(edited((directory / MANIFEST).read_text(), change, seal))


def edit_artifact(path: Path, change, *, seal: bool) -> None:
    """``edit_manifest`` for an artifact directory or a .fsn zip (written again in place)."""
    if path.is_dir():
        edit_manifest(path, change, seal=seal)
        return
    with zipfile.ZipFile(path) as z:
        entries = {info.filename: z.read(info) for info in z.infolist()}
    entries[MANIFEST] = edited(entries[MANIFEST], change, seal).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)


def expect_failure(path, check: str) -> None:
    with pytest.raises(ArtifactError, match=check):
        fuser_mlir.load(path)


@pytest.mark.parametrize("name", ["softmax.fsn", "softmax"], ids=["fsn", "dir"])
def test_an_export_to_a_place_that_cannot_be_written_is_an_artifact_error(tmp_path, name):
    # It was an OSError naming the temporary file next to the path, and `fuser-mlir compile` printed its traceback.
    compiled = softmax_fusion().compile(softmax_args())
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(ArtifactError, match=rf"cannot write the artifact {blocker / name}: .*; choose a writable path"):
        compiled.export(blocker / name)
    assert blocker.read_text() == "not a directory" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    if name.endswith(".fsn"):  # a directory where the zip goes
        (tmp_path / name).mkdir()
        with pytest.raises(ArtifactError, match=rf"cannot write the artifact {tmp_path / name}: Is a directory"):
            compiled.export(tmp_path / name)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", name]


def test_a_wrong_format_version_is_refused(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    edit_manifest(directory, lambda m: m.update(format_version=99))
    expect_failure(directory, r"format version check failed: .* has format version 99, this fuser-mlir reads versions 1, 2, 3 and 4")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_artifact_still_loads(exported, tmp_path, version):
    """Versions 2 and 3 only added kinds of launch formulas (dynamic shared
    memory, the device's SM count), which older artifacts do not hold, and
    manifests written before the manifest digest have none: they load and
    run as before."""
    directory = as_directory(exported[1], tmp_path)
    edit_manifest(directory, lambda m: (m.update(format_version=version), m.pop(DIGEST)), seal=False)
    fd, loaded = exported[0], fuser_mlir.load(directory)
    inputs = softmax_args(4, 20)
    originals = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
    check_against_reference(fd, loaded.run(inputs), inputs, originals)


def test_a_loaded_artifact_cuts_its_split_kernels_into_blocks(exported, tmp_path):
    """The split dims of each CPU kernel travel in the image spec; a loaded
    kernel runs cut into blocks like a fresh one, and an artifact written
    before split dims existed (no ``split``) runs its kernels whole."""
    fd, path = exported
    splits = [entry["split"] for entry in fuser_mlir.load(path).manifest["image"]["kernels"].values()]
    assert any(split is not None for split in splits)
    directory = as_directory(path, tmp_path)
    for name, expect_cut in [("split", True), ("older", False)]:
        if name == "older":
            edit_manifest(directory, lambda m: [entry.pop("split") for entry in m["image"]["kernels"].values()])
        inputs = softmax_args(6, 9)
        originals = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
        with cut_into_blocks() as counts:
            outs = fuser_mlir.load(directory).run(inputs)
        check_against_reference(fd, outs, inputs, originals)
        assert (counts["cut"] > 0) == expect_cut, (name, counts)


def test_a_loaded_elementwise_kernel_merges_the_dims_of_short_rows(tmp_path):
    """Whether a CPU kernel is elementwise travels in the image spec; a
    loaded one merges the dims of a large call of short rows, and one
    written before the field existed runs the rows as they are."""
    with FusionDefinition(name="rows_of_three") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x) * 2.0 + x)
    path = tmp_path / "rows"
    fd.compile([np.ones((4, 3), np.float32)]).export(path)
    assert [entry["elementwise"] for entry in fuser_mlir.load(path).manifest["image"]["kernels"].values()] == [True]
    for name, expect_merged in [("elementwise", 1), ("older", 0)]:
        if name == "older":
            edit_manifest(path, lambda m: [entry.pop("elementwise") for entry in m["image"]["kernels"].values()])
        x = np.random.default_rng().standard_normal((50_000, 3)).astype(np.float32)
        original = x.copy()
        with merging() as merged:
            outs = fuser_mlir.load(path).run([x])
        check_against_reference(fd, outs, [x], [original])
        assert merged["merged"] == expect_merged, name
    edit_manifest(path, lambda m: [entry.update(elementwise="yes") for entry in m["image"]["kernels"].values()])
    expect_failure(path, r"image.kernels.\w+.elementwise")


def test_a_malformed_split_fails_the_image_check(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    edit_manifest(directory, lambda m: [entry.update(split=[7] * len(entry["args"])) for entry in m["image"]["kernels"].values()])
    expect_failure(directory, r"the image's entry for segment \w+ is malformed: CpuKernel \w+: split dim 7 for an argument of kind")


def test_a_directory_that_is_not_an_artifact_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    expect_failure(tmp_path / "empty", r"format check failed: .* without manifest.json")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / MANIFEST).write_text('{"format": "something else"}')
    expect_failure(tmp_path / "other", r"format check failed: .* is not a fuser-mlir artifact")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / MANIFEST).write_text('{"format": ')
    expect_failure(tmp_path / "broken", r"manifest check failed: .* is not valid JSON")
    expect_failure(tmp_path / "missing.fsn", r"no artifact at .*missing.fsn")


def test_a_corrupted_kernel_fails_its_sha256_check(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    library = directory / "kernels" / "cpu.so"
    data = bytearray(library.read_bytes())
    data[len(data) // 2] ^= 0xFF
    library.write_bytes(bytes(data))
    expect_failure(directory, r"sha256 check failed: .*kernels/cpu.so does not match")


def test_a_truncated_kernel_fails_its_size_check(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    library = directory / "kernels" / "cpu.so"
    library.write_bytes(library.read_bytes()[:1000])
    expect_failure(directory, r"size check failed: .*kernels/cpu.so has 1000 bytes")


def test_a_missing_file_fails_the_file_check(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    (directory / "ir" / "fuser.mlir").unlink()
    expect_failure(directory, r"file check failed: .* lists ir/fuser.mlir, which cannot be read")


def test_a_truncated_zip_fails_the_zip_check(tmp_path):
    fd = softmax_fusion()
    path = fd.compile(softmax_args()).export(tmp_path / "a.fsn")
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    expect_failure(path, r"zip check failed: .* is not a readable .fsn zip file")


def test_a_corrupted_deflate_stream_fails_the_zip_check(tmp_path, monkeypatch):
    """A flipped byte in compressed data can make zlib fail before the CRC
    check does (seen on the H200 host's Python 3.12)."""
    import zlib

    fd = softmax_fusion()
    path = fd.compile(softmax_args()).export(tmp_path / "a.fsn")

    def broken(self, name, pwd=None):
        raise zlib.error("Error -3 while decompressing data: invalid distance too far back")

    monkeypatch.setattr(zipfile.ZipFile, "read", broken)
    expect_failure(path, r"zip check failed: reading .* failed \(Error -3 while decompressing data.*\); the file is corrupted")


def rezip(source: Path, target: Path, extra: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            new.writestr(info, old.read(info))
        for name, data in extra.items():
            new.writestr(name, data)
    return target


@pytest.mark.parametrize("name", ["../evil.txt", "/tmp/evil.txt", "kernels/../../evil.txt", "kernels\\evil.txt", "./manifest.json"])
def test_zip_entries_that_leave_the_artifact_are_refused(tmp_path, name):
    fd = softmax_fusion()
    path = Path(fd.compile(softmax_args()).export(tmp_path / "a.fsn"))
    bad = rezip(path, tmp_path / "bad.fsn", {name: b"x"})
    expect_failure(bad, r"entry path check failed: .* absolute or leaves the artifact")
    assert not (tmp_path.parent / "evil.txt").exists()


def test_a_zip_entry_that_unpacks_too_large_is_refused(tmp_path, monkeypatch):
    from fuser_mlir.runtime import artifact

    fd = softmax_fusion()
    path = fd.compile(softmax_args()).export(tmp_path / "a.fsn")
    monkeypatch.setattr(artifact, "MAX_FILE_BYTES", 1000)
    expect_failure(path, r"size check failed: .* unpacks to \d+ bytes, more than 1000")


def test_unlisted_zip_entries_are_refused(tmp_path):
    fd = softmax_fusion()
    path = Path(fd.compile(softmax_args()).export(tmp_path / "a.fsn"))
    bad = rezip(path, tmp_path / "bad.fsn", {"kernels/extra.so": b"x"})
    expect_failure(bad, r"entry path check failed: .* holds files its manifest does not list: kernels/extra.so")


def test_a_manifest_listing_a_path_outside_the_directory_is_refused(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    edit_manifest(directory, lambda m: m["files"].update({"../outside": {"sha256": "0" * 64, "size": 1}}))
    expect_failure(directory, r"entry path check failed: .*'\.\./outside'")


def test_a_kernel_for_another_cpu_fails_the_target_check(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    edit_manifest(directory, lambda m: m["image"]["target"].update(isa=["avx9000"]))
    expect_failure(directory, r"target check failed: .* compiled for a CPU with avx9000, which this CPU lacks")
    edit_manifest(directory, lambda m: m["image"]["target"].update(machine="riscv64", isa=[]))
    expect_failure(directory, r"target check failed: .* compiled for machine 'riscv64'")


def test_a_library_with_initialisers_fails_the_library_check(exported, tmp_path):
    """A shared object with a constructor (code dlopen would run) is never opened."""
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler")
    directory = as_directory(exported[1], tmp_path)
    source = tmp_path / "ctor.c"
    marker = tmp_path / "constructor-ran"
    source.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void f(void) {{ fclose(fopen("{marker}", "w")); }}\n')
    library = directory / "kernels" / "cpu.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    data = library.read_bytes()
    import hashlib

    edit_manifest(directory, lambda m: m["files"]["kernels/cpu.so"].update(size=len(data), sha256=hashlib.sha256(data).hexdigest()))
    expect_failure(directory, r"library check failed: .* it has .*DT_INIT.*code that loading would run")
    assert not marker.exists()


def test_a_manifest_without_a_field_is_an_artifact_error(exported, tmp_path):
    directory = as_directory(exported[1], tmp_path)
    edit_manifest(directory, lambda m: m.pop("plan"))
    expect_failure(directory, rf"{re.escape(str(directory))}: manifest check failed: the manifest has no 'plan'; export the fusion again")


def output_buffer(manifest: dict) -> dict:
    return manifest["plan"]["buffers"][manifest["plan"]["outputs"][0]]


def first_kernel(manifest: dict) -> dict:
    return manifest["image"]["kernels"][manifest["plan"]["steps"][0]["kernel"]]


def last_kernel(manifest: dict) -> dict:
    return manifest["image"]["kernels"][manifest["plan"]["steps"][-1]["kernel"]]


# Hand edits of a softmax artifact's manifest, each once an AttributeError, TypeError, IndexError or
# ValueError out of fuser_mlir.load or of every call, or a load that ran and gave wrong results (or,
# symbol-of-another-segment, a segfault); and what the checks behind the digest say of it. Each edit is
# tried unsealed (the digest check refuses it) and sealed (the digest written anew, as by a writer with
# a bug, or by a deliberate edit).
MANIFEST_EDITS = [
    pytest.param(lambda m: m["files"].update({"ir/fuser.mlir": "abc"}), r"""files\['ir/fuser.mlir'\] is "abc", not an object""", id="files-entry-a-string"),
    pytest.param(lambda m: m["files"]["kernels/cpu.so"].update(size=str(m["files"]["kernels/cpu.so"]["size"])),
                 r"""files\['kernels/cpu.so'\].size is "\d+", not an integer""", id="file-size-a-string"),
    pytest.param(lambda m: m["image"].update(kernels=[]), r"image.kernels is \[\], not an object", id="image-kernels-a-list"),
    pytest.param(lambda m: m["image"].update(target="linux"), r'image.target is "linux", not an object', id="image-target-a-string"),
    pytest.param(lambda m: m.update(stages=["ir/fuser.mlir"]), r'stages is \["ir/fuser.mlir"\], not an object', id="stages-a-list"),
    pytest.param(lambda m: m["plan"].update(aliases=[1]), r"plan.aliases is \[1\], not an object", id="plan-aliases-a-list"),
    pytest.param(lambda m: m["signature"]["classes"].__setitem__(-1, 99), r"signature.classes\[\d+\] is 99, not an extent id \(0 to \d+\)",
                 id="signature-classes-out-of-range"),
    pytest.param(lambda m: m["executor_key"][1].__setitem__(0, {"a": 1}), r"executor_key is .*, not \[device, one entry per input \(3\), given outputs\]",
                 id="executor-key-with-an-object"),
    pytest.param(lambda m: m["plan"].update(steps=[]), r"plan.outputs\[0\] is buffer \d+, which no step writes", id="plan-steps-emptied"),
    pytest.param(lambda m: output_buffer(m).update(dtype="float64"), r'plan.buffers\[\d+\].dtype is "float64", but visible output 0 is float32',
                 id="output-buffer-dtype-changed"),
    pytest.param(lambda m: first_kernel(m)["args"][0].__setitem__(0, "float64"),
                 r"plan.steps\[0\].args\[0\] is \[\"buffer\", 0\], a float32 buffer of rank 2, but kernel \w+ takes a float64 tensor of rank 2 there",
                 id="kernel-argument-dtype-changed"),
    pytest.param(lambda m: output_buffer(m)["shape"].append(["const", 2]),
                 r"plan.buffers\[\d+\].shape is .*, of rank 3, but visible output 0 has rank 2", id="output-buffer-rank-changed"),
    pytest.param(lambda m: first_kernel(m)["args"][0].__setitem__(1, 3),
                 r"plan.steps\[0\].args\[0\] is \[\"buffer\", 0\], a float32 buffer of rank 2, but kernel \w+ takes a float32 tensor of rank 3",
                 id="kernel-argument-rank-changed"),
    pytest.param(lambda m: first_kernel(m).update(symbol=last_kernel(m)["symbol"]),
                 r'image.kernels.(\w+).symbol is "_mlir__mlir_ciface_\w+", not the entry point of segment \1', id="symbol-of-another-segment"),
    pytest.param(lambda m: m.update(hazard_policy="nonsense"), r'hazard_policy is "nonsense", not one of auto, reorder, copy, reject', id="hazard-policy-unknown"),
]


@pytest.mark.parametrize("seal", [False, True], ids=["unsealed", "sealed"])
@pytest.mark.parametrize("change, message", MANIFEST_EDITS)
def test_a_malformed_manifest_fails_its_check_at_load(exported, change, message, seal):
    # Each was a raw exception (at load or on every call) or a silently wrong result.
    _, path = exported
    edit_artifact(path, change, seal=seal)
    with pytest.raises(ArtifactError) as failed:
        fuser_mlir.load(path)
    if not seal:
        message = rf"manifest check failed: {re.escape(str(path))}/manifest.json was edited or damaged after export \(its digest does not match\); export the fusion again"
    assert re.search(message, str(failed.value)), str(failed.value)
    assert str(path) in str(failed.value) and "export the fusion again" in str(failed.value)


@pytest.mark.parametrize("version", [True, 1.0, 3.0, "3"])
def test_a_format_version_of_another_type_is_refused(exported, version):
    # True and 1.0 were read as version 1.
    _, path = exported
    edit_artifact(path, lambda m: m.update(format_version=version), seal=True)
    expect_failure(path, rf"format version check failed: .* has format version {re.escape(repr(version))}, this fuser-mlir reads versions 1, 2, 3 and 4")


def test_the_digest_catches_a_well_typed_edit_and_an_unedited_artifact_runs(exported, tmp_path):
    """Pinning input 0's rows to 5 is a well-formed signature that every
    check behind the digest accepts (sealed, it loads, and then no other
    size runs); the digest refuses it. A copy left as exported loads and
    computes the softmax."""
    _, path = exported
    pristine = tmp_path / "pristine"
    shutil.copytree(as_directory(path, tmp_path), pristine)

    def pin(manifest):
        manifest["signature"]["inputs"][0].update(shape=[5, -1])

    edit_artifact(path, pin, seal=False)
    expect_failure(path, r"manifest check failed: .*/manifest.json was edited or damaged after export \(its digest does not match\)")
    sealed = tmp_path / "sealed"
    shutil.copytree(pristine, sealed)
    edit_artifact(sealed, pin, seal=True)
    with pytest.raises(InputError, match=r"input 0 dim 0 has size 7, but the definition declares size 5"):
        fuser_mlir.load(sealed).run(softmax_args(7, 9))
    loaded = fuser_mlir.load(pristine)
    for rows, cols in [(5, 9), (7, 33)]:
        x, bias, scale = softmax_args(rows, cols)
        (out,) = loaded.run([x, bias, scale])
        t = (x.astype(np.float64) + bias) * scale
        e = np.exp(t - t.max(axis=0, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(axis=0, keepdims=True), rtol=1e-5, atol=1e-7)


def test_a_plan_that_writes_an_input_the_signature_does_not_update_is_refused(tmp_path):
    # alias_input set to null skipped the check that an input updated in place is writable.
    fd = alias_fusion()
    path = tmp_path / "alias"
    fd.compile([rand(4, 6)], outputs=[np.empty((4, 1), np.float32), None]).export(path)
    edit_artifact(path, lambda m: m["signature"]["outputs"][0].update(alias_input=None), seal=True)
    expect_failure(path, r"manifest check failed: plan.steps\[\d+\] writes input 0, which the signature does not update in place")


def test_an_older_manifest_has_its_fields_checked(exported, tmp_path):
    """A manifest without a digest (written before it existed) gets every check but the digest's."""
    directory = as_directory(exported[1], tmp_path)
    edit_manifest(directory, lambda m: (m.pop(DIGEST), m["image"].update(target="linux")), seal=False)
    expect_failure(directory, r'manifest check failed: image.target is "linux", not an object')


def test_an_exception_no_check_foresaw_is_an_artifact_error_that_keeps_it(exported, monkeypatch):
    """What a malformed manifest raises past every check is an ArtifactError
    with the path, the exception's type and text, chained from it."""
    _, path = exported

    def unforeseen(*args):
        raise AttributeError("'str' object has no attribute 'get'")

    for place in ("_check_fields", "check_fit"):
        with monkeypatch.context() as patch:
            patch.setattr(artifact, place, unforeseen)
            with pytest.raises(ArtifactError) as failed:
                fuser_mlir.load(path)
        assert str(failed.value) == (
            f"manifest check failed: {path}: the manifest is incomplete or malformed "
            "(AttributeError: 'str' object has no attribute 'get'); export the fusion again"
        )
        assert isinstance(failed.value.__cause__, AttributeError)


def test_the_hazard_policies_a_manifest_may_name_are_the_passes():
    from fuser_mlir.passes.resolve_alias_hazards import POLICIES

    assert artifact.HAZARD_POLICIES == POLICIES


# -- export errors -----------------------------------------------------------------------


def test_exporting_without_a_kernel_image_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CC", "none")
    monkeypatch.setenv("FUSER_CACHE", "0")
    compiled = softmax_fusion().compile(softmax_args())
    assert compiled.image is None
    with pytest.raises(ArtifactError, match=r"cannot export fusion 'softmax' compiled for cpu: linking CPU kernels is disabled \(FUSER_CC=none\)"):
        compiled.export(tmp_path / "a.fsn")
    assert not (tmp_path / "a.fsn").exists()


def test_exporting_a_fusion_compiled_without_an_executor_key_is_a_clear_error(tmp_path):
    from fuser_mlir.compiler import compile_fusion

    with pytest.raises(ArtifactError, match=r"compiled without an executor key .* fd.compile\(inputs, outputs=...\)"):
        compile_fusion(softmax_fusion()).export(tmp_path / "a.fsn")


def test_export_replaces_an_artifact_directory_but_not_other_directories(tmp_path):
    compiled = softmax_fusion().compile(softmax_args())
    compiled.export(tmp_path / "a")
    compiled.export(tmp_path / "a")  # replaced
    assert fuser_mlir.load(tmp_path / "a").num_segments == compiled.num_segments
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    with pytest.raises(ArtifactError, match=r"exists and is not a fuser-mlir artifact"):
        compiled.export(tmp_path / "b")
    assert (tmp_path / "b" / "notes.txt").read_text() == "mine"


def test_a_loaded_artifact_exports_again_and_keeps_its_stages(exported, tmp_path):
    loaded = fuser_mlir.load(exported[1])
    again = fuser_mlir.load(loaded.export(tmp_path / "again.fsn"))
    assert again.ir("fuser") == loaded.ir("fuser") and "llvm.func" in again.ir("cpu")
    assert again.to_dot().startswith('digraph "softmax"')


def test_a_backend_stage_the_fusion_lacks_is_named_with_the_device_it_was_compiled_for(exported):
    """Asking a CPU fusion for its GPU kernels says why there are none and how
    to get them, for a compiled fusion and a loaded artifact alike."""
    from fuser_mlir.compiler import compile_fusion

    loaded = fuser_mlir.load(exported[1])
    compiled = softmax_fusion().compile(softmax_args())
    for fusion in (compiled, loaded):
        with pytest.raises(KeyError, match=r"compiled for cpu, so it has no 'gpu' stage, which only a fusion compiled for a CUDA device "
                                           r"\(device='cuda:N', or CUDA arrays\) has \(its stages: fuser, segmented, outlined, cpu\)"):
            fusion.ir("gpu")
        with pytest.raises(KeyError, match=r"unknown stage 'ptx'; stages: fuser, segmented, outlined, cpu"):
            fusion.ir("ptx")
    on_gpu = compile_fusion(softmax_fusion(), device="cuda:0")
    assert "gpu.module" in on_gpu.ir("gpu")
    with pytest.raises(KeyError, match=r"compiled for cuda:0, so it has no 'cpu' stage, which only a fusion compiled for the CPU"):
        on_gpu.ir("cpu")


def test_a_cuda_artifact_exports_and_inspects_anywhere_and_loads_only_with_cuda(tmp_path, capsys):
    """The GPU pipeline compiles without a GPU; such an artifact is checked and
    inspected here, and loading it names what is missing (or runs, on a GPU)."""
    from devices import cuda_available

    from fuser_mlir.compiler import compile_fusion
    from fuser_mlir.errors import CudaError
    from fuser_mlir.executor import FusionExecutorCache
    from fuser_mlir.tools.cli import main

    with FusionDefinition(name="gpu") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x) * 2.0)
    example = rand(4, 8)
    compiled = compile_fusion(fd, device="cuda:0")
    compiled.key = FusionExecutorCache(fd).key("cuda:0", [example], {})
    path = compiled.export(tmp_path / "gpu.fsn")
    manifest, files = read_artifact(path)
    assert manifest["backend"] == "cuda" and any(name.endswith(".ptx") for name in files)
    assert main(["inspect", path]) == 0
    assert "backend cuda (cuda:0)" in capsys.readouterr().out
    if not cuda_available():
        with pytest.raises(CudaError, match=r"CUDA is not available"):
            fuser_mlir.load(path)
        return
    from devices import to_device, to_host

    loaded = fuser_mlir.load(path)
    (out,) = loaded.run([to_device(example, "cuda")])
    np.testing.assert_allclose(to_host(out), np.exp(example.astype(np.float64)) * 2.0, rtol=1e-5)


def _in_place_reshape_and_scalar() -> tuple[FusionDefinition, list]:
    with FusionDefinition("odd") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        t = fd.ops.sum(x, dims=[1], keepdim=True)
        fd.add_output(x - t * s, x)
        fd.add_output(t)
        fd.add_output(fd.ops.reshape(x * 2.0, [-1]))
    return fd, [np.zeros((8, 32), np.float32), 0.5]


def _bool_int_and_half() -> tuple[FusionDefinition, list]:
    with FusionDefinition("kinds") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Half)
        mask = fd.ops.exp(x) > 2.0
        fd.add_output(mask)
        fd.add_output(fd.ops.sum(mask, dims=[1]))
        fd.add_output(fd.ops.cast(x, DataType.Int32))
    return fd, [np.zeros((8, 32), np.float16)]


@pytest.mark.parametrize("build", [lambda: (softmax_fusion(), softmax_args()), _in_place_reshape_and_scalar, _bool_int_and_half],
                         ids=["softmax", "in_place_reshape_scalar", "bool_int_half"])
def test_a_cuda_artifact_passes_the_manifest_checks(build, tmp_path, monkeypatch):
    """What a GPU host checks as it loads a CUDA artifact, on a host without
    one: the fields, the key against the signature, and the plan against the
    kernels, made from the image spec as runtime.cuda.load_kernels makes them
    (every check but the driver's). A false refusal would discard every CUDA
    disk-cache entry and refuse every CUDA artifact."""
    import types

    from fuser_mlir.compiler import compile_fusion
    from fuser_mlir.executor import tensor_signature
    from fuser_mlir.runtime.cpu import ArgKind
    from fuser_mlir.runtime.plan import LaunchPlan
    from fuser_mlir.runtime.signature import FusionSignature

    monkeypatch.setenv("FUSER_CACHE", "0")
    fd, args = build()
    compiled = compile_fusion(fd, device="cuda:0", layouts={"input": [None if np.isscalar(a) else (True, 16) for a in args], "given": {}})
    compiled.key = ("cuda:0", tuple(type(a).__name__ if np.isscalar(a) else tensor_signature(a) for a in args), ())
    path = compiled.export(tmp_path / "cuda.fsn")
    manifest, _ = read_artifact(path)
    plan = LaunchPlan.from_json(json.dumps(manifest["plan"]))
    signature = FusionSignature.from_json(manifest["signature"])
    artifact._key_from_json(manifest["executor_key"], signature)
    segments = manifest["image"]["segments"]
    kernels = {name: types.SimpleNamespace(arg_kinds=[ArgKind(dtype, rank) for dtype, rank in s["args"]]) for name, s in segments.items()}
    artifact.check_fit(plan, signature, kernels)
    assert manifest["backend"] == "cuda" and {step.kernel for step in plan.steps} <= set(kernels)
