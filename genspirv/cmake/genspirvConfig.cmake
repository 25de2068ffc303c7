# genspirv's CMake package.
#
#   find_package(genspirv CONFIG REQUIRED)   # -Dgenspirv_DIR=$(python -m genspirv cmake-dir), or
#                                            # -DCMAKE_PREFIX_PATH=<the venv or prefix genspirv is in>
#   genspirv_add_shaders(<target> [ROOT <dir>])
#   target_link_libraries(<yours> PRIVATE genspirv::hazards)   # genspirv/hazards.h (genspirv::vulkan:
#                                                              # genspirv/vulkan.h and the Vulkan headers)
#
# This folder is the whole package (the headers are in include/): a project may vendor a copy of
# it and build its committed tables with -DGENSPIRV_COMPILE_SHADERS=OFF, with no genspirv installed.
#
# <target> becomes a library of the files `genspirv build` writes for the project at
# ROOT (default: the current source dir; the project whose pyproject.toml has
# [tool.genspirv] with generate entries): the C table (target "c") and any project
# template's outputs. Their sources (.c, .cpp, ...) make a static library; a table of
# headers only (a header-only table from a template) an INTERFACE library.
# The build reruns `genspirv build` only when a file it read changed (a
# depfile lists the sources, their includes, pyproject.toml, the generator
# and template files), and the generated headers, genspirv/hazards.h and
# genspirv/vulkan.h are on <target>'s public include path. A genspirv run that
# changes no byte of the generated files (a comment edited in a GLSL header) rebuilds
# nothing after it (the target compiles copies made only when their bytes change,
# which Ninja restats). A generate entry with blobs = "files" is compiled with what
# the compiler has (a try_compile, once): .incbin, else #embed, else the arrays
# (MSVC); -DGENSPIRV_BLOBS=embed|incbin|arrays decides instead. A CTest test
# <target>_genspirv_check runs `genspirv check` (call enable_testing() to have it).
#
# -DGENSPIRV_COMPILE_SHADERS=OFF builds the committed files as they are: no
# genspirv build step, no check test, no shader compiler needed (and without a
# genspirv installation at all, the C table, whose path is then read from
# pyproject.toml's generate entry).
#
# Python: the interpreter genspirv is installed in, found from where this file
# sits (<prefix>/lib/pythonX.Y/site-packages/genspirv/cmake: <prefix>/bin/pythonX.Y;
# Windows: <prefix>/Scripts/python.exe), else Python3_EXECUTABLE or python3 on PATH
# if it imports this very package; -DGENSPIRV_PYTHON=<python> chooses another.

cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.28)   # DEPFILE with Makefiles needs 3.20; CMP0116 NEW for Ninja

# The headers live in this folder: a copy of it alone is the whole package (vendored into a project
# that builds its committed tables with -DGENSPIRV_COMPILE_SHADERS=OFF).
get_filename_component(genspirv_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/include" ABSOLUTE)
get_filename_component(_genspirv_package "${CMAKE_CURRENT_LIST_DIR}/.." REALPATH)

option(GENSPIRV_COMPILE_SHADERS
       "genspirv_add_shaders runs genspirv build when a shader changes (OFF: the committed blobs and table as they are, no shader compiler needed)"
       ON)
set(GENSPIRV_PYTHON "" CACHE FILEPATH "the Python that runs genspirv (empty: the one genspirv is installed in)")
set(GENSPIRV_BLOBS "auto" CACHE STRING
    "how a blobs = \"files\" table puts its blobs into the program: auto (what the compiler has: incbin, else embed, else arrays), embed, incbin or arrays")
set_property(CACHE GENSPIRV_BLOBS PROPERTY STRINGS auto embed incbin arrays)

# Asks `python` for genspirv; sets <out_version> to its version ("" if it cannot import it)
# and <out_here> to TRUE when the package it imports is this one.
function(_genspirv_ask python out_version out_here)
  set(${out_version} "" PARENT_SCOPE)
  set(${out_here} FALSE PARENT_SCOPE)
  execute_process(
    COMMAND "${python}" -c "import os, sys, genspirv, genspirv.buildsys.builder; sys.stdout.write(genspirv.__version__ + '\\n' + os.path.dirname(os.path.realpath(genspirv.__file__)))"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    WORKING_DIRECTORY "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")   # not the caller's folder: a genspirv/ there would win
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    string(REGEX REPLACE ".*\n" "" err "${err}")      # the last line says why
    set(_genspirv_ask_error "${err}" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "\n" ";" out "${out}")
  list(GET out 0 version)
  list(GET out 1 where)
  file(TO_CMAKE_PATH "${where}" where)
  set(${out_version} "${version}" PARENT_SCOPE)
  if(where STREQUAL _genspirv_package)
    set(${out_here} TRUE PARENT_SCOPE)
  endif()
endfunction()

set(genspirv_PYTHON "")
set(_genspirv_tried "")
if(GENSPIRV_PYTHON)
  _genspirv_ask("${GENSPIRV_PYTHON}" _genspirv_version _genspirv_here)
  if(_genspirv_version)
    set(genspirv_PYTHON "${GENSPIRV_PYTHON}")
  else()
    set(_genspirv_tried "GENSPIRV_PYTHON=${GENSPIRV_PYTHON} cannot import genspirv (${_genspirv_ask_error})")
  endif()
else()
  # <site-packages>/genspirv/cmake: the site-packages folder's prefix holds its interpreter.
  get_filename_component(_genspirv_site "${_genspirv_package}" DIRECTORY)
  get_filename_component(_genspirv_lib_py "${_genspirv_site}" DIRECTORY)        # lib/pythonX.Y, or Lib
  get_filename_component(_genspirv_py_name "${_genspirv_lib_py}" NAME)          # pythonX.Y
  get_filename_component(_genspirv_prefix "${_genspirv_lib_py}/../.." ABSOLUTE)
  get_filename_component(_genspirv_win_prefix "${_genspirv_lib_py}/.." ABSOLUTE)
  get_filename_component(_genspirv_site_name "${_genspirv_site}" NAME)
  set(_genspirv_candidates "")
  if(_genspirv_site_name MATCHES "^(site|dist)-packages$")   # else a source tree (an editable install)
    set(_genspirv_candidates
        "${_genspirv_prefix}/bin/${_genspirv_py_name}" "${_genspirv_prefix}/bin/python3" "${_genspirv_prefix}/bin/python"
        "${_genspirv_win_prefix}/Scripts/python.exe" "${_genspirv_win_prefix}/python.exe")
  endif()
  if(Python3_EXECUTABLE)       # what this package's older versions asked for
    list(APPEND _genspirv_candidates "${Python3_EXECUTABLE}")
  endif()
  find_program(_genspirv_path_python NAMES python3 python)
  if(_genspirv_path_python)
    list(APPEND _genspirv_candidates "${_genspirv_path_python}")
  endif()
  unset(_genspirv_path_python CACHE)
  list(REMOVE_DUPLICATES _genspirv_candidates)
  foreach(_genspirv_candidate IN LISTS _genspirv_candidates)
    if(EXISTS "${_genspirv_candidate}" AND NOT IS_DIRECTORY "${_genspirv_candidate}")
      _genspirv_ask("${_genspirv_candidate}" _genspirv_version _genspirv_here)
      if(_genspirv_here)
        set(genspirv_PYTHON "${_genspirv_candidate}")
        break()
      endif()
      list(APPEND _genspirv_tried "${_genspirv_candidate}")
    endif()
  endforeach()
  string(JOIN ", " _genspirv_tried ${_genspirv_tried})
  if(_genspirv_tried)
    set(_genspirv_tried "tried ${_genspirv_tried}: none imports the genspirv of ${_genspirv_package}")
  else()
    set(_genspirv_tried "no Python found beside ${_genspirv_package} or on PATH")
  endif()
endif()

if(NOT genspirv_PYTHON AND GENSPIRV_COMPILE_SHADERS)
  set(genspirv_FOUND FALSE)
  set(genspirv_NOT_FOUND_MESSAGE
      "genspirv: ${_genspirv_tried}; set GENSPIRV_PYTHON to the Python that has genspirv installed, or build the committed shaders with -DGENSPIRV_COMPILE_SHADERS=OFF")
  cmake_policy(POP)
  return()
endif()
if(NOT genspirv_PYTHON)
  message(STATUS "genspirv: ${_genspirv_tried}: GENSPIRV_COMPILE_SHADERS=OFF builds the committed tables without it")
endif()
if(genspirv_PYTHON AND genspirv_VERSION AND NOT _genspirv_version STREQUAL genspirv_VERSION)
  message(WARNING "genspirv: this CMake package is ${genspirv_VERSION}, but ${genspirv_PYTHON} imports genspirv "
                  "${_genspirv_version}; point genspirv_DIR at `${genspirv_PYTHON} -m genspirv cmake-dir`")
endif()
# genspirv_add_shaders may be called from any directory of the project.
set(_genspirv_python "${genspirv_PYTHON}" CACHE INTERNAL "the Python genspirv_add_shaders runs")
set(_genspirv_include_dir "${genspirv_INCLUDE_DIR}" CACHE INTERNAL "the folder of genspirv/hazards.h and vulkan.h")

# The headers as targets: genspirv::hazards (genspirv/hazards.h, C99) and genspirv::vulkan
# (genspirv/vulkan.h, which also needs the Vulkan headers and, included before it, a table).
# genspirv::vulkan carries the Vulkan headers' include: the project's Vulkan::Headers where it has
# that target (find_package(Vulkan), before or after this package, or the VulkanHeaders package),
# else the folder of <vulkan/vulkan.h> found here: -DGENSPIRV_VULKAN_INCLUDE_DIR=<dir> names another.
if(NOT TARGET genspirv::hazards)
  add_library(genspirv::hazards INTERFACE IMPORTED GLOBAL)
  set_target_properties(genspirv::hazards PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${genspirv_INCLUDE_DIR}")
endif()
if(NOT TARGET genspirv::vulkan)
  find_path(GENSPIRV_VULKAN_INCLUDE_DIR vulkan/vulkan.h HINTS "$ENV{VULKAN_SDK}/include"
            DOC "the folder of vulkan/vulkan.h, for genspirv::vulkan when the project has no Vulkan::Headers")
  add_library(genspirv::vulkan INTERFACE IMPORTED GLOBAL)
  set_target_properties(genspirv::vulkan PROPERTIES
                        INTERFACE_LINK_LIBRARIES "genspirv::hazards;$<TARGET_NAME_IF_EXISTS:Vulkan::Headers>")
  if(GENSPIRV_VULKAN_INCLUDE_DIR)
    set_target_properties(genspirv::vulkan PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                          "$<$<NOT:$<TARGET_EXISTS:Vulkan::Headers>>:${GENSPIRV_VULKAN_INCLUDE_DIR}>")
  endif()
endif()

# The C table's header and source for the project at <root>, without Python: pyproject.toml's
# first inline generate entry of target "c" (generate = [ { target = "c", output = "..." } ]).
function(_genspirv_table_from_pyproject target root out_header out_source)
  file(READ "${root}/pyproject.toml" text)
  string(REGEX MATCHALL "{[^{}]*}" entries "${text}")
  foreach(entry IN LISTS entries)
    if(entry MATCHES "target[ \t]*=[ \t]*[\"']c[\"']" AND entry MATCHES "output[ \t]*=[ \t]*[\"']([^\"']+)[\"']")
      set(${out_header} "${root}/${CMAKE_MATCH_1}.h" PARENT_SCOPE)
      set(${out_source} "${root}/${CMAKE_MATCH_1}.c" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "genspirv_add_shaders(${target}): ${root}/pyproject.toml has no generate entry "
                      "{ target = \"c\", output = \"...\" } that CMake can read without Python; set "
                      "GENSPIRV_PYTHON to a Python with genspirv installed")
endfunction()

# What the compiler of <lang> (C or CXX) has to put a blob file into a program as
# blobs = "files" does: "incbin" (the assembler's .incbin: no compile time at all), else
# "embed" (C23 #embed), or "arrays" where neither compiles and links (MSVC). A try_compile of genspirv's own probe
# (python -m genspirv.emit.cmake probe), once per build folder and language;
# -DGENSPIRV_BLOBS=embed|incbin|arrays decides instead.
function(_genspirv_blob_mechanism lang out)
  if(NOT GENSPIRV_BLOBS STREQUAL "auto")
    set(${out} "${GENSPIRV_BLOBS}" PARENT_SCOPE)
    return()
  endif()
  if(DEFINED _genspirv_blobs_${lang})
    set(${out} "${_genspirv_blobs_${lang}}" PARENT_SCOPE)
    return()
  endif()
  set(dir "${CMAKE_BINARY_DIR}/CMakeFiles/genspirv-blob-probe")
  execute_process(COMMAND "${_genspirv_python}" -m genspirv.emit.cmake probe --dest "${dir}"
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "genspirv: cannot write the blob probe: ${err}")
  endif()
  if(lang STREQUAL "CXX")
    set(probe "${dir}/probe.cpp")
  else()
    set(probe "${dir}/probe.c")
  endif()
  set(found "arrays")
  foreach(mechanism IN ITEMS incbin embed)
    string(TOUPPER "${mechanism}" upper)
    try_compile(_genspirv_probe_${mechanism}_${lang} "${dir}/${mechanism}-${lang}" SOURCES "${probe}"
                COMPILE_DEFINITIONS -DGENSPIRV_BLOBS_${upper}=1)
    if(_genspirv_probe_${mechanism}_${lang})
      set(found "${mechanism}")
      break()
    endif()
  endforeach()
  set(_genspirv_blobs_${lang} "${found}" CACHE INTERNAL "what the ${lang} compiler has for blobs = \"files\"")
  message(STATUS "genspirv: blobs = \"files\" with the ${lang} compiler: ${found}")
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

function(genspirv_add_shaders target)
  cmake_parse_arguments(PARSE_ARGV 1 _gs "" "ROOT" "")
  if(_gs_UNPARSED_ARGUMENTS)
    # A list joins with ';' when expanded in a string: join the words with spaces.
    string(JOIN " " unknown ${_gs_UNPARSED_ARGUMENTS})
    message(FATAL_ERROR "genspirv_add_shaders(${target}): unknown arguments: ${unknown} "
                        "(usage: genspirv_add_shaders(<target> [ROOT <dir>]))")
  endif()
  if("ROOT" IN_LIST _gs_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "genspirv_add_shaders(${target}): ROOT needs a folder (the one holding the "
                        "pyproject.toml with [tool.genspirv])")
  endif()
  if(NOT _gs_ROOT)
    set(_gs_ROOT "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  get_filename_component(root "${_gs_ROOT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${root}/pyproject.toml")
    message(FATAL_ERROR "genspirv_add_shaders(${target}): ${root}/pyproject.toml does not exist (ROOT is the "
                        "folder of the pyproject.toml with [tool.genspirv])")
  endif()

  # Every file the project's generate entries write, with its entry's blobs mode: the C
  # table's header and source, a project template's output (a header-only table too).
  set(outputs "")
  set(files_mode FALSE)
  if(NOT _genspirv_python)
    # GENSPIRV_COMPILE_SHADERS=OFF on a machine without genspirv: the committed table as it is.
    _genspirv_table_from_pyproject(${target} "${root}" header source)
    set(outputs "${header}" "${source}")
  else()
    execute_process(
      COMMAND "${_genspirv_python}" -m genspirv.emit.cmake outputs --root "${root}"
      RESULT_VARIABLE rc OUTPUT_VARIABLE lines ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE
      WORKING_DIRECTORY "${root}")
    if(NOT rc EQUAL 0)
      string(STRIP "${err}" err)
      message(FATAL_ERROR "genspirv_add_shaders(${target}): ${err}")
    endif()
    string(REPLACE "\n" ";" lines "${lines}")
    foreach(line IN LISTS lines)
      if(line MATCHES "^([a-z]+) (.+)$")
        list(APPEND outputs "${CMAKE_MATCH_2}")
        if(CMAKE_MATCH_1 STREQUAL "files")
          set(files_mode TRUE)
        endif()
      endif()
    endforeach()
  endif()
  set(missing FALSE)
  foreach(path IN LISTS outputs)
    if(NOT EXISTS "${path}")
      set(missing TRUE)
    endif()
  endforeach()
  if(missing AND NOT _genspirv_python)
    message(FATAL_ERROR "genspirv_add_shaders(${target}): ${outputs} are not all there, and without genspirv "
                        "nothing can make them: commit them, or set GENSPIRV_PYTHON")
  endif()
  if(missing)
    # A project that has never been built: the library needs its files now.
    message(STATUS "genspirv: the generated files of ${root} do not exist yet: running genspirv build")
    execute_process(COMMAND "${_genspirv_python}" -m genspirv --root "${root}" build --quiet
                    RESULT_VARIABLE rc ERROR_VARIABLE err WORKING_DIRECTORY "${root}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "genspirv_add_shaders(${target}): genspirv build failed:\n${err}")
    endif()
  endif()
  # The generate entries live in pyproject.toml: reconfigure when it changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${root}/pyproject.toml")

  # Sources are compiled into a static library; a table of headers only is an INTERFACE
  # library. A .c file is also valid C++: a C++-only project compiles it as such.
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  set(source_pattern "\\.(c|cc|cpp|cxx|c\\+\\+|C)$")

  if(NOT GENSPIRV_COMPILE_SHADERS)
    # The committed files as they are: no shader compiler needed, no genspirv step. A
    # blobs = "files" table finds its blob files from its own folder (on the include path).
    message(STATUS "genspirv: ${target} uses the committed files of ${root} (GENSPIRV_COMPILE_SHADERS=OFF)")
    set(sources "")
    set(dirs "")
    foreach(path IN LISTS outputs)
      get_filename_component(dir "${path}" DIRECTORY)
      list(APPEND dirs "${dir}")
      if(path MATCHES "${source_pattern}")
        list(APPEND sources "${path}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES dirs)
    _genspirv_library(${target} "${sources}" "${dirs}" "" "")
    return()
  endif()

  # `genspirv build` writes the generated files in the source tree (they are committed) and
  # rewrites a file only when its bytes change. The library compiles copies in the build
  # tree (`python -m genspirv.emit.cmake stage`), each likewise rewritten only when its bytes
  # change: the copies are the command's BYPRODUCTS, so Ninja restats them (restat = 1) and
  # a genspirv run that changed no byte of them (a comment edited in an included GLSL header)
  # recompiles and relinks nothing. Make has no restat, but compares the copies' unchanged
  # timestamps with the objects' and also rebuilds nothing. A blobs = "files" file is staged
  # for what this compiler has (probed once: _genspirv_blob_mechanism), with absolute blob
  # paths, or as arrays where it has neither. The stamp is the command's one OUTPUT (the
  # depfile's target); nothing else depends on it. Committed files are never outputs or
  # byproducts: `clean` must not delete them.
  set(copies "${CMAKE_CURRENT_BINARY_DIR}/genspirv/${target}")
  set(stamp "${copies}.stamp")
  set(depfile "${stamp}.d")
  set(staged "")
  set(sources "")
  foreach(path IN LISTS outputs)
    get_filename_component(name "${path}" NAME)
    list(APPEND staged "${copies}/${name}")
    if(name MATCHES "${source_pattern}")
      list(APPEND sources "${copies}/${name}")
    endif()
  endforeach()
  set(mechanism "incbin")
  set(definitions "")
  if(files_mode)
    set(lang "CXX")
    foreach(path IN LISTS sources)
      if(path MATCHES "\\.c$" AND "C" IN_LIST languages)
        set(lang "C")
      endif()
    endforeach()
    _genspirv_blob_mechanism(${lang} mechanism)
    if(NOT mechanism STREQUAL "arrays")
      string(TOUPPER "GENSPIRV_BLOBS_${mechanism}=1" definitions)
    endif()
  endif()
  file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/genspirv")   # genspirv refuses a depfile in a missing folder
  add_custom_command(
    OUTPUT "${stamp}"
    BYPRODUCTS ${staged}
    COMMAND "${_genspirv_python}" -m genspirv --root "${root}" build --quiet
            --depfile "${depfile}" --depfile-target "${stamp}"
    COMMAND "${_genspirv_python}" -m genspirv.emit.cmake stage --root "${root}" --dest "${copies}"
            --files-as "${mechanism}"
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS "${root}/pyproject.toml"
    DEPFILE "${depfile}"
    WORKING_DIRECTORY "${root}"
    COMMENT "genspirv build (${root})"
    VERBATIM)
  add_custom_target(${target}_genspirv_build DEPENDS "${stamp}")
  _genspirv_library(${target} "${sources}" "${copies}" "${target}_genspirv_build" "${definitions}")

  add_test(NAME ${target}_genspirv_check
           COMMAND "${_genspirv_python}" -m genspirv --root "${root}" check
           WORKING_DIRECTORY "${root}")
endfunction()

# <target>: a static library of <sources>, or an INTERFACE library where there are none
# (a header-only table), with <dirs> and genspirv's headers on its include path.
function(_genspirv_library target sources dirs depends definitions)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(sources)
    add_library(${target} STATIC ${sources})
    foreach(path IN LISTS sources)
      if(path MATCHES "\\.c$" AND NOT "C" IN_LIST languages)
        set_source_files_properties("${path}" PROPERTIES LANGUAGE CXX)
      endif()
    endforeach()
    set(scope PUBLIC)
    if(definitions)
      target_compile_definitions(${target} PRIVATE ${definitions})
    endif()
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
    if(definitions)
      target_compile_definitions(${target} INTERFACE ${definitions})
    endif()
  endif()
  if(depends)
    add_dependencies(${target} ${depends})    # an INTERFACE library's consumers wait for it too (3.19)
  endif()
  target_include_directories(${target} ${scope} ${dirs} "${_genspirv_include_dir}")
endfunction()

cmake_policy(POP)
