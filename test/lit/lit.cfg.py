# lit configuration of drc's FileCheck tests.
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "drc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.drc_obj_root
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# Compiled objects are cached inside the build tree, not in the user's home.
config.environment["DRC_CACHE_DIR"] = os.path.join(config.drc_obj_root, "object-cache")
config.substitutions.append(("%drc_src", config.drc_source_dir))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tools = ["drc-opt", "drc-compile", "drc-instantiate", "drc-train", "drc-bench", "drc-eval", "drc-probe", "drc-data", "drc-time"]
llvm_config.add_tool_substitutions(
    [t for t in tools if os.path.exists(os.path.join(config.drc_tools_dir, t))],
    [config.drc_tools_dir])

# PTX assembly checks need CUDA's ptxas (on PATH, under $CUDA_HOME or at
# /usr/local/cuda, where this project's machines have it). Without it those
# tests report UNSUPPORTED, and this note says why.
import shutil
ptxas = shutil.which("ptxas") or next(
    (p for p in (os.path.join(r, "bin", "ptxas")
                 for r in (os.environ.get("CUDA_HOME"), "/usr/local/cuda") if r)
     if os.access(p, os.X_OK)), None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
else:
    lit_config.note("ptxas not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): "
                    "the PTX assembly tests are skipped")
