"""Names the dead-code check (``python -m vulture genspirv tools tests``, run by
tests/test_deadcode.py) must not report, each with why it is alive.

Vulture reads this file as code that uses the names below; it never runs it.
Keep it short: a name belongs here only when nothing in genspirv/, tools/ or
tests/ can show vulture its use. Spec tables (``OP_*``, ``STORAGE_*``,
``DECORATION_*`` of genspirv/reflect/spirv.py) are passed with --ignore-names instead.
"""

# ruff: noqa
# flake8: noqa
_ = None

# Looked up by name from benchmarks/__init__.py's SUITES table.
_.bench_build
_.bench_reflect_suite
_.bench_runtime
_.bench_demo
_.bench_push
_.bench_compilers
_.bench_build_ab

# Started by name in a worker process (genspirv/toolchain/workers.py: python -c "...import serve; serve()"),
# and the handler factory it is given by name ("module:open_handler": slang/workers.py, build/compile_workers.py).
_.serve
_.open_handler

# Fields of frozen records: read by users of the record, or part of its identity.
_.interface          # reflect.EntryPoint: the entry point's interface ids, as SPIR-V lists them
_.warnings           # toolchain.CompileOutput: glslang's other output, kept for the caller
_.memory_type        # runtime.memory.Buffer: the memory type index it was allocated from
_.ino                # buildsys.statlog.FileStat: compared as a whole with the stat log's entry
_._whole             # runtime.memory: the cached whole-buffer view (set through obj.__dict__)
_.NONE               # runtime.hazards.BarrierPolicy: chosen by its value, "none" (tests, GENSPIRV_BARRIERS)

# Public API the docs name (docs/GUIDE.md, docs/RULES.md#stable-names): users call it, no code here has to.
_.generator_tool     # spirv.Module
_.reset_stats        # runtime.Device
_.sync_hazards       # runtime.Device

# Vulkan structure fields written through cffi, read by the driver.
_.sType
_.dstSet
_.dstBinding
_.descriptorCount
_.descriptorType
_.pBufferInfo
_.descriptorPool

# Callback signatures fixed by their caller (Vulkan's debug messenger, a checker protocol,
# jinja2's loader protocol) and module hooks Python itself calls (PEP 562).
_.user_data
_.entry_name
_.get_source
_.environment
_.__getattr__
_.__dir__

# Fields of the read-only debug view (runtime.device.DeviceDebug), for people and tests.
_.max_plans
_.physical_device

# Started by name in the fresh interpreter where the generator cannot be forked (isolated._BOOT).
_._serve

# Chosen by its value: --annotations github (results.Annotations).
_.GITHUB

# runtime.limits.DeviceLimits: read by getattr from the names _COUNTED builds
# (max_per_stage_descriptor_<kind>, max_descriptor_set_<kind>).
_.max_per_stage_descriptor_uniform_buffers
_.max_per_stage_descriptor_sampled_images
_.max_per_stage_descriptor_storage_images
_.max_per_stage_descriptor_samplers
_.max_descriptor_set_storage_buffers
_.max_descriptor_set_uniform_buffers
_.max_descriptor_set_sampled_images
_.max_descriptor_set_storage_images
_.max_descriptor_set_samplers
