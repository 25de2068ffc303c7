# genspirv's CMake package.
#
#   find_package(genspirv CONFIG REQUIRED)   # -Dgenspirv_DIR=$(python -m genspirv cmake-dir)
#   genspirv_add_shaders(<target> [ROOT <dir>])
#
# <target> becomes a static library of the C table that `genspirv build` writes
# for the project at ROOT (default: the current source dir; the project whose
# pyproject.toml has [tool.genspirv] with a generate entry of target "c").
# The build reruns `genspirv build` only when a file it read changed (a
# depfile lists the sources, their includes, pyproject.toml, the generator
# and template files), and the table's header, genspirv/hazards.h and
# genspirv/vulkan.h are on <target>'s public include path. A genspirv run that
# changes no byte of the table (a comment edited in a GLSL header) rebuilds
# nothing after it (the target compiles copies of the table made with
# copy_if_different, which Ninja restats). A CTest test <target>_genspirv_check runs
# `genspirv check` (call enable_testing() to have it).
#
# -DGENSPIRV_COMPILE_SHADERS=OFF builds the committed table as it is: no
# genspirv build step, no check test, no shader compiler needed (a machine that
# only builds and runs the program).
#
# Python: Python3_EXECUTABLE if set, else find_package(Python3 COMPONENTS
# Interpreter); genspirv must be importable there.

cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.28)   # DEPFILE with Makefiles needs 3.20; CMP0116 NEW for Ninja

get_filename_component(genspirv_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)

if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter QUIET)
endif()
if(NOT Python3_EXECUTABLE)
  set(genspirv_FOUND FALSE)
  set(genspirv_NOT_FOUND_MESSAGE
      "genspirv: no Python 3 interpreter found; set Python3_EXECUTABLE to the Python that has genspirv installed")
  cmake_policy(POP)
  return()
endif()

execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c "import sys, genspirv; sys.stdout.write(genspirv.__version__)"
  RESULT_VARIABLE _genspirv_rc OUTPUT_VARIABLE _genspirv_version ERROR_VARIABLE _genspirv_err)
if(NOT _genspirv_rc EQUAL 0)
  set(genspirv_FOUND FALSE)
  set(genspirv_NOT_FOUND_MESSAGE
      "genspirv: Python3_EXECUTABLE=${Python3_EXECUTABLE} cannot import genspirv "
      "(pip install genspirv into that Python, or set Python3_EXECUTABLE to one that has it):\n${_genspirv_err}")
  cmake_policy(POP)
  return()
endif()
if(genspirv_VERSION AND NOT _genspirv_version STREQUAL genspirv_VERSION)
  message(WARNING "genspirv: this CMake package is ${genspirv_VERSION}, but ${Python3_EXECUTABLE} imports genspirv "
                  "${_genspirv_version}; point genspirv_DIR at `${Python3_EXECUTABLE} -m genspirv cmake-dir`")
endif()
set(genspirv_PYTHON "${Python3_EXECUTABLE}")
option(GENSPIRV_COMPILE_SHADERS
       "genspirv_add_shaders runs genspirv build when a shader changes (OFF: the committed blobs and table as they are, no shader compiler needed)"
       ON)
# genspirv_add_shaders may be called from any directory of the project.
set(_genspirv_python "${Python3_EXECUTABLE}" CACHE INTERNAL "the Python genspirv_add_shaders runs")
set(_genspirv_include_dir "${genspirv_INCLUDE_DIR}" CACHE INTERNAL "the folder of genspirv/hazards.h and vulkan.h")

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

  execute_process(
    COMMAND "${_genspirv_python}" -m genspirv.emit.cmake table --root "${root}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    message(FATAL_ERROR "genspirv_add_shaders(${target}): ${err}")
  endif()
  string(REPLACE "\n" ";" table "${table}")
  list(GET table 0 header)
  list(GET table 1 source)
  if(NOT EXISTS "${source}" OR NOT EXISTS "${header}")
    # A project that has never been built: the library needs its source now.
    message(STATUS "genspirv: ${source} does not exist yet: running genspirv build")
    execute_process(COMMAND "${_genspirv_python}" -m genspirv --root "${root}" build --quiet
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "genspirv_add_shaders(${target}): genspirv build failed:\n${err}")
    endif()
  endif()
  # The generate entry's path lives in pyproject.toml: reconfigure when it changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${root}/pyproject.toml")

  if(NOT GENSPIRV_COMPILE_SHADERS)
    # The committed blobs and table as they are: no shader compiler needed, no genspirv step.
    message(STATUS "genspirv: ${target} uses the committed table ${source} (GENSPIRV_COMPILE_SHADERS=OFF)")
    get_filename_component(header_dir "${header}" DIRECTORY)
    add_library(${target} STATIC "${source}")
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "C" IN_LIST languages)
      set_source_files_properties("${source}" PROPERTIES LANGUAGE CXX)
    endif()
    target_include_directories(${target} PUBLIC "${header_dir}" "${_genspirv_include_dir}")
    return()
  endif()

  # `genspirv build` writes the table in the source tree (it is committed) and
  # rewrites a file only when its bytes change. The library compiles copies in
  # the build tree, made with copy_if_different, which likewise keeps an
  # unchanged copy's timestamp: the copies are the command's BYPRODUCTS, so
  # Ninja restats them (restat = 1) and a genspirv run that changed no byte of
  # the table (a comment edited in an included GLSL header) recompiles and
  # relinks nothing. Make has no restat, but compares the copies' unchanged
  # timestamps with the objects' and also rebuilds nothing. The stamp is the
  # command's one OUTPUT (the depfile's target); nothing else depends on it.
  # Committed files are never outputs or byproducts: `clean` must not delete them.
  get_filename_component(header_name "${header}" NAME)
  get_filename_component(source_name "${source}" NAME)
  set(copies "${CMAKE_CURRENT_BINARY_DIR}/genspirv/${target}")
  set(stamp "${copies}.stamp")
  set(depfile "${stamp}.d")
  file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/genspirv")   # genspirv refuses a depfile in a missing folder
  add_custom_command(
    OUTPUT "${stamp}"
    BYPRODUCTS "${copies}/${header_name}" "${copies}/${source_name}"
    COMMAND "${_genspirv_python}" -m genspirv --root "${root}" build --quiet
            --depfile "${depfile}" --depfile-target "${stamp}"
    COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${header}" "${copies}/${header_name}"
    COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${source}" "${copies}/${source_name}"
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS "${root}/pyproject.toml"
    DEPFILE "${depfile}"
    WORKING_DIRECTORY "${root}"
    COMMENT "genspirv build (${root})"
    VERBATIM)
  add_custom_target(${target}_genspirv_build DEPENDS "${stamp}")

  add_library(${target} STATIC "${copies}/${source_name}")
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST languages)
    # The table is also valid C++: a C++-only project compiles it as such.
    set_source_files_properties("${copies}/${source_name}" PROPERTIES LANGUAGE CXX)
  endif()
  add_dependencies(${target} ${target}_genspirv_build)
  target_include_directories(${target} PUBLIC "${copies}" "${_genspirv_include_dir}")

  add_test(NAME ${target}_genspirv_check
           COMMAND "${_genspirv_python}" -m genspirv --root "${root}" check
           WORKING_DIRECTORY "${root}")
endfunction()

cmake_policy(POP)
