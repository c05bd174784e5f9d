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
tools = ["drc-opt", "drc-compile", "drc-instantiate", "drc-train", "drc-bench", "drc-eval", "drc-probe", "drc-data"]
llvm_config.add_tool_substitutions(
    [t for t in tools if os.path.exists(os.path.join(config.drc_tools_dir, t))],
    [config.drc_tools_dir])
