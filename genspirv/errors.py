"""The one error hierarchy of genspirv.

Every error genspirv raises on purpose is a ``GenspirvError``. The CLI turns
one into a message and an exit code (``exit_code``) instead of a traceback.
Subclasses say which stage refused what; their messages name the file, the
shader, the binding or the word offset.
"""

from __future__ import annotations


class GenspirvError(Exception):
    """Root of every error genspirv raises."""

    exit_code = 1

    def naming(self, where: str) -> "GenspirvError":
        """This error with ``where`` (the file it is about) before its message, unless already there."""
        message = str(self)
        if not message.startswith(f"{where}:"):
            self.args = (f"{where}: {message}", *self.args[1:])
        return self


class UsageError(GenspirvError):
    """A command-line argument genspirv cannot use (names the option and the fix)."""

    exit_code = 2


# -- build side ---------------------------------------------------------------


class ConfigError(GenspirvError):
    """Bad `[tool.genspirv]` configuration (names the key)."""

    exit_code = 2


class ToolchainError(GenspirvError):
    """A compiler or tool is missing, of the wrong version, crashed or hung."""

    exit_code = 2


class CompileError(GenspirvError):
    """glslang refused a shader; the message holds glslang's file:line output.

    ``messages`` is glslang's own text (the same for every variant it hit) and
    ``source`` the file compiled, so a build can print each distinct error once.
    """

    exit_code = 1

    def __init__(self, message: str, messages: str = "", source: str = ""):
        super().__init__(message)
        self.messages = messages
        self.source = source


class UnavailableError(CompileError):
    """A compiler lacks an extension the shader needs (``missing`` names them), or is not
    installed (``missing`` names the compiler); ``compiler`` names it ("" : the default)."""

    def __init__(self, message: str, missing: tuple = (), messages: str = "", source: str = "",
                 compiler: str = ""):
        super().__init__(message, messages=messages, source=source)
        self.missing = tuple(missing)
        self.compiler = compiler

    @classmethod
    def lacking(cls, what: str, source: str, missing: tuple, compiler: str, messages: str) -> "UnavailableError":
        """``compiler`` (its name and version, e.g. "glslang 13.1.1") lacks the ``missing``
        extensions ``source`` asks for: the one message every compiler gives."""
        return cls(f"{what}: {source} needs {', '.join(missing)}, which {compiler} does not support "
                   f"(mark the variant optional = true to build without it):\n{messages}",
                   missing=missing, messages=messages, source=source)


class CompilerCrashError(CompileError):
    """An in-process compiler's worker crashed, hit its memory cap or timed out on one variant.

    Only that variant is lost (the worker is replaced), so unlike a ToolchainError
    it does not stop the other compiles.
    """


class ValidationError(GenspirvError):
    """spirv-val refused a compiled blob."""

    exit_code = 1


class SpirvError(GenspirvError):
    """Malformed SPIR-V. ``offset`` is the word offset where reading failed."""

    exit_code = 1

    def __init__(self, message: str, offset: int | None = None):
        self.offset = offset
        if offset is not None:
            message = f"{message} (at word {offset})"
        super().__init__(message)


class ReflectError(GenspirvError):
    """Well-formed SPIR-V that reflection cannot describe (e.g. no entry point)."""

    exit_code = 1


class ManifestError(GenspirvError):
    """A manifest that does not parse, breaks the schema, or names bad paths/blobs."""

    exit_code = 1


class CodegenError(GenspirvError):
    """A generated-code target that is unknown, or a manifest it cannot represent."""

    exit_code = 2


class LockError(GenspirvError):
    """Another build holds the project's lock for too long."""

    exit_code = 2


class OutputError(GenspirvError):
    """An output file or folder cannot be written (full disk, no permission, a file in the way)."""

    exit_code = 2


class ExtraMissingError(GenspirvError, ImportError):
    """A part of genspirv needs an extra that is not installed (the runtime: numpy and vulkan)."""

    exit_code = 2

    @classmethod
    def runtime(cls, missing: list[str]) -> "ExtraMissingError":
        return cls(f"genspirv.runtime needs {' and '.join(missing)}, which this Python lacks: "
                   "pip install 'genspirv[runtime]'")


# -- runtime side -------------------------------------------------------------


class RuntimeCheckError(GenspirvError):
    """What the host asked for disagrees with the manifest (the hard checks)."""


class BindingCountError(RuntimeCheckError):
    """Number of bound buffers differs from the kernel's binding_count."""


class PushConstantError(RuntimeCheckError):
    """Named push values that do not fit the kernel's push-constant members (names the member)."""


class PushConstantSizeError(PushConstantError):
    """Push data size differs from the kernel's push_constant_size."""


class SpecConstantError(RuntimeCheckError):
    """Unknown spec constant name, or a value of the wrong type or outside its type's range (names the range)."""


class BlobIntegrityError(RuntimeCheckError):
    """A blob's sha256 differs from the one the manifest records."""


class ManifestMismatchError(RuntimeCheckError):
    """A manifest entry's reflected field differs from what its blob reflects to."""


class BufferRangeError(RuntimeCheckError):
    """A buffer view or transfer outside its buffer."""


class DispatchError(RuntimeCheckError):
    """A dispatch of zero groups or beyond the device's limits."""


class AllocationError(RuntimeCheckError):
    """An allocation larger than the device can give (names the size and the limit)."""


class ForeignObjectError(RuntimeCheckError):
    """A buffer, view or kernel used with a Device it does not belong to, or of a closed one."""


class ArgumentTypeError(RuntimeCheckError, TypeError):
    """A runtime call given the wrong kind of argument (a numpy array where a buffer
    goes, a float group count); also a ``TypeError``. The message names the argument
    and what to pass."""


class DeviceLimitError(RuntimeCheckError):
    """A kernel past a limit of the device it is created on (push constants, descriptors per
    stage or per layout, descriptor sets, workgroup, shared memory); names the limit and both values."""


class WorkgroupLimitError(DeviceLimitError):
    """A kernel's specialised workgroup size or shared memory is 0 or past the device's limits."""


class InFlightError(GenspirvError):
    """The runtime was about to rewrite memory a submitted batch still references (a bug)."""


class DeviceFeatureError(GenspirvError):
    """The device lacks a feature a kernel needs (e.g. 16-bit storage)."""


class VulkanError(GenspirvError):
    """A Vulkan call failed; the message names the call and the VkResult."""
