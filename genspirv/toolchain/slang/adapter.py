"""slang-glslang behind the build's compiler seam (``genspirv.toolchain.compiler.Compiler``).

Takes an open ``SlangGlslang`` and the default compiler, whose SPIR-V steps it
shares; gives ``SlangGlslangCompiler``: ``compile(job)`` preprocesses and
compiles the variant in a worker (``SlangGlslang.compile``), ``optimize`` and
``validate`` are the default compiler's own spirv-opt and spirv-val steps for
the variant's ``target_env``, so a blob is optimised and validated exactly as
glslang's are; a variant's ``preamble`` goes before its source as for glslang
(docs/COMPILERS.md, "In a build"). Files are found through the job's path helpers
(``Job.tool_path``, ``Job.named``), so a generated source compiles in check's
temporary folder as in ``.genspirv/generated/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from ..compiler import Compiler, CompilerOutput, Job
from ...errors import GenspirvError
from .slang_glslang import NAME, SlangGlslang


@dataclass(frozen=True)
class SlangGlslangCompiler:
    slang: SlangGlslang
    tools: Compiler                 # the default compiler: its optimize and validate steps

    @property
    def version(self) -> str:
        """Everything that decides the bytes but the name: '2026.12 (slangpy 0.43.1), preprocessed by glslang 13.1.1'."""
        return self.slang.identity[len(NAME) + 1:]

    @property
    def optimizer_version(self) -> Optional[str]:
        return self.tools.optimizer_version

    def manifest_facts(self) -> Mapping[str, str]:
        """What the manifest's toolchain records of this compiler when it built some variant."""
        return {"slang_glslang": self.slang.library.version, "slangpy": self.slang.library.wheel_version}

    def compile(self, job: Job) -> CompilerOutput:
        v = job.variant
        # Files are found through the job: a generated source, header or include folder lies in
        # check's temporary folder, not the root; what comes back names it as every key does.
        source = job.tool_path(v.source)
        preamble = job.tool_path(v.preamble) if v.preamble else None
        dirs = tuple(map(job.tool_path, job.include_dirs))
        if job.on_command is not None:
            # In-process: no command runs; -v still says which compiler built what, and how.
            job.on_command([str(self.slang.library.path), "--target-env", v.target_env,
                            *(f"-D{k}={val}" for k, val in v.defines), *(f"-I{d}" for d in dirs),
                            *v.compiler_flags, *([f"--preamble={preamble}"] if preamble else []), source])
        try:
            out = self.slang.compile(source, root=job.root, defines=v.defines_dict, include_dirs=dirs,
                                     target_env=v.target_env, flags=v.compiler_flags, include_directive=job.include_directive,
                                     what=v.name, preamble=preamble)
        except GenspirvError as exc:
            raise job.renamed(exc) from None
        return job.output(out.blob, out.depends, out.diagnostics)

    def optimize(self, job: Job, blob: bytes) -> bytes:
        return self.tools.optimize(job, blob)

    def validate(self, job: Job, blob: bytes) -> None:
        self.tools.validate(job, blob)

    def strip(self, job: Job, blob: bytes) -> bytes:
        return self.tools.strip(job, blob)
