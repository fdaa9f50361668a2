# Requirement on the package: importing arfit.plugins (and arfit.plugins.vllm, .sglang, .flashinfer) must never
# import the compiled extension arfit._core, nor the engines. vLLM and SGLang import these modules in every one of
# their processes through their entry points, and the plugins must work where the extension is absent or broken
# (a source checkout on PYTHONPATH, an engine image with another ABI). So python/arfit/__init__.py, when it
# exists, imports arfit._core lazily, inside the functions that need it, never at module level; and the modules
# here use the standard library only.
"""arfit's engine plugins: install a table written by `arfit codegen --format vllm|sglang|flashinfer` into the
running engine, from the file an environment variable names (docs/python_plugins.md)."""
