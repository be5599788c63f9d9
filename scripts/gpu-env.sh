# Source on the GPU host: unpacks the MLIR bindings bundle and the wheels the
# host lacks (see ../shared/gpu/README.md), and puts them on PYTHONPATH.
#   . scripts/gpu-env.sh
python3 scripts/unpack-mlir-bundle.py .gpu-bundle/mlir-py312.tar.xz /tmp/mlir-site >/dev/null
if [ -d .gpu-bundle/wheels ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/extra-site .gpu-bundle/wheels/*.whl >/dev/null 2>&1 || true
fi
export PYTHONPATH=/tmp/mlir-site:/tmp/extra-site:$PWD
