// A file compiled into the binary (see cmake/EmbedFiles.cmake).
#pragma once

#include <string>
#include <vector>

namespace gpurent {

struct EmbeddedFile {
  std::string name;
  std::string content;
};

}  // namespace gpurent
