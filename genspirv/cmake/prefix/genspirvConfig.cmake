# genspirv's CMake package, as an install prefix holds it: <prefix>/share/cmake/genspirv/ (the
# wheel installs this file there), for find_package(genspirv) with CMAKE_PREFIX_PATH=<prefix>.
# The package itself lives in the Python package, <prefix>/lib/pythonX.Y/site-packages/genspirv/cmake
# (Windows: <prefix>/Lib/site-packages/...): this file includes it from there.

get_filename_component(_genspirv_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
file(GLOB _genspirv_configs
     "${_genspirv_prefix}/lib/python3*/site-packages/genspirv/cmake/genspirvConfig.cmake"
     "${_genspirv_prefix}/lib/python3*/dist-packages/genspirv/cmake/genspirvConfig.cmake"
     "${_genspirv_prefix}/Lib/site-packages/genspirv/cmake/genspirvConfig.cmake")
if(NOT _genspirv_configs)
  # An editable install keeps the package in its source tree: ask the prefix's Python where.
  foreach(_genspirv_python IN ITEMS "${_genspirv_prefix}/bin/python3" "${_genspirv_prefix}/Scripts/python.exe")
    if(EXISTS "${_genspirv_python}")
      execute_process(COMMAND "${_genspirv_python}" -m genspirv cmake-dir
                      RESULT_VARIABLE _genspirv_rc OUTPUT_VARIABLE _genspirv_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                      ERROR_QUIET)
      if(_genspirv_rc EQUAL 0 AND EXISTS "${_genspirv_dir}/genspirvConfig.cmake")
        file(TO_CMAKE_PATH "${_genspirv_dir}" _genspirv_dir)
        set(_genspirv_configs "${_genspirv_dir}/genspirvConfig.cmake")
        break()
      endif()
    endif()
  endforeach()
endif()
if(NOT _genspirv_configs)
  set(genspirv_FOUND FALSE)
  set(genspirv_NOT_FOUND_MESSAGE
      "genspirv: ${CMAKE_CURRENT_LIST_FILE} finds no genspirv package under ${_genspirv_prefix} (was genspirv uninstalled?)")
  return()
endif()
list(SORT _genspirv_configs)
list(REVERSE _genspirv_configs)     # several Pythons in one prefix: the newest
list(GET _genspirv_configs 0 _genspirv_config)
include("${_genspirv_config}")
