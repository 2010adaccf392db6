# gpurent_embed_files(OUT <cpp> NAMESPACE <ns> FUNCTION <fn> FILES <f>...)
# Generates a .cpp that defines `std::vector<EmbeddedFile> ns::fn()` holding the files'
# names and bytes, so binaries carry their migrations without a path to the source tree.
function(gpurent_embed_files)
  cmake_parse_arguments(E "" "OUT;NAMESPACE;FUNCTION;HEADER" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${E_OUT}
    COMMAND ${CMAKE_COMMAND} -DOUT=${E_OUT} -DNAMESPACE=${E_NAMESPACE}
            -DFUNCTION=${E_FUNCTION} -DHEADER=${E_HEADER} "-DFILES=${E_FILES}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_files_script.cmake
    DEPENDS ${E_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_files_script.cmake
    COMMENT "Embedding ${E_FUNCTION}"
    VERBATIM)
endfunction()
