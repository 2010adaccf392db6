// The files of api/openapi/ (generated at build time by cmake/EmbedFiles.cmake).
#pragma once

#include "core/embedded_file.h"

#include <vector>

namespace gpurent::http {

std::vector<EmbeddedFile> openapi_fragment_files();

}  // namespace gpurent::http
